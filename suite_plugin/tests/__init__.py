"""Tests of the suite's own pytest plugin (suite_plugin/): its options, schedule, threads and replication scope."""
