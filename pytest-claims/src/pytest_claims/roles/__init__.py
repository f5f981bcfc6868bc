"""The pytest roles the switchboard registers: options, collection, the worker, the controller and its outputs."""
