"""The outputs: the HTML page and its parts, the claim table's exports, saved runs, the report directory's files."""
