"""Server side of deriving a problem: the document's text plus recorded traces from history."""

from __future__ import annotations

from kernelevolve.search.history_lsp import traces_for_file
from kernelevolve.search.spec_from_selection import DerivedProblem, derive_problem
from kernelevolve.server.lsp.server import DocInfo, EvolveServer


def derive_blocking(ls: EvolveServer, info: DocInfo, line: int) -> DerivedProblem:
    """Run on io_pool: reads traces from SQLite. Raises SpecUnavailable with advice."""
    traced: dict[str, list[dict[str, object]]] = {}
    if info.path is not None and ls.db_path.exists():
        for record in reversed(traces_for_file(ls.history(), str(info.path))):  # newest wins
            if record.call_index == 0:
                traced[record.qualname] = record.args
    return derive_problem(
        info.text,
        line=line,
        out_dir=ls.problems_dir,
        file_path=info.path,
        display_name=info.display_name,
        traced=traced.get,
    )
