"""Claims of the papers as executable specifications: one package per paper, one module per claim."""
