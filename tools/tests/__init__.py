"""Tests of the suite's tools (tools/), against constructed evidence folders and unit values."""
