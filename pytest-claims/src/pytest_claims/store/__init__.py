"""Files: atomic writes, the one bounded reader of files from elsewhere, and the keyed, resumable result store."""
