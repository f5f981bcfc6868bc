# docs: pytest-claims' documentation site (mkdocs --strict) and its code blocks run as tests.
# Sourced by .ci/step (which sets work, compare, needs); run it alone with `.ci/step docs`.
.ci/docs  # pytest-claims' documentation site (mkdocs --strict) and its code blocks run as tests
