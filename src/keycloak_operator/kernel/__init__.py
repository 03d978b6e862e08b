"""The kernel: object names, the patterns user-written names must match, and the Event the decisions return.

It imports nothing of the operator's own, so every layer above may use it (docs/architecture.md).
"""
