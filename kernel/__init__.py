"""The kernel: small, pure building blocks that every app may use and none may copy.

It sits below `tenants`, `curation` and `retrieval` (import-linter's lowest layer): it
imports the standard library only, never Django, an app or an infrastructure client, so
any layer of any app can depend on it without bending the one-way app order.
"""
