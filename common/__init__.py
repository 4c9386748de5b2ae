"""The floor: plumbing that several apps need, below them all and free of them.

It sits between `tenants` and `kernel` (import-linter's app layers): Django, DRF,
Celery and provider clients are allowed here, but no app and not the project, so
`retrieval`, `curation` and `tenants` share these helpers instead of borrowing one
another's entrypoints or adapters. What is pure Python goes one floor lower, in `kernel`.
"""
