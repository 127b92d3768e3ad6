"""Lowering of a captured ATen graph to Triton source built from knowledge/code_samples templates.

``lower(graph, problem_source, variant)`` (in ``lower.py``) returns a complete candidate file;
``uncovered_ops(graph)`` lists the ops outside the template library.
"""
