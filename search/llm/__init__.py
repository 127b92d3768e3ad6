"""The LLM side of the universal operator: client (streaming, retries, ledger, budget), diagnosis,
prompt synthesis and the tool-using episode. Nothing here imports pygls."""
