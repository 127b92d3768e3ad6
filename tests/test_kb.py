"""The knowledge base: real documents, FTS5 retrieval with filters, rebuild on change, workspace docs."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from kernelevolve.knowledge.kb import (
    BUILTIN_ROOT,
    Document,
    KnowledgeBase,
    KnowledgeError,
    fts_query,
    parse_markdown,
)


@pytest.fixture(scope="module")
def kb() -> KnowledgeBase:
    return KnowledgeBase()


def test_every_builtin_document_parses_and_is_listed_in_the_index(kb: KnowledgeBase) -> None:
    index = (BUILTIN_ROOT / "index.md").read_text()
    docs = [d for d in kb.documents() if d.source == "builtin"]
    assert len(docs) >= 15
    for doc in docs:
        assert doc.summary, f"{doc.id} has no summary"
        assert len(doc.body) > 400, f"{doc.id} is too thin to be useful"
        assert f"`{doc.id.split('/')[-1]}`" in index, f"{doc.id} missing from knowledge/index.md"


def test_code_samples_are_indexed_by_their_docstrings(kb: KnowledgeBase) -> None:
    samples = [d for d in kb.documents() if d.source == "code_sample"]
    assert samples, "H6's verified templates should be indexed"
    assert all(d.title.startswith("Code sample:") for d in samples)


def test_compile_error_query_finds_the_compiler_errors_guide(kb: KnowledgeBase) -> None:
    hits = kb.search("arange's range must be a power of 2", kind="compile")
    assert hits[0].document.id == "guidance/compiler-errors"


def test_memory_bottleneck_on_hopper_retrieves_memory_guidance_and_hopper_notes(kb: KnowledgeBase) -> None:
    hits = kb.search("memory bandwidth bound coalescing HBM", platform="hopper", kind="memory", limit=8)
    ids = [h.document.id for h in hits]
    assert "guidance/memory-bound" in ids[:3]
    assert not any(i.startswith("hardware/") and i != "hardware/hopper" for i in ids)


def test_platform_filter_excludes_other_platforms(kb: KnowledgeBase) -> None:
    ids = [h.document.id for h in kb.search("wavefront MFMA LDS", platform="hopper", limit=20)]
    assert "hardware/amd-cdna3" not in ids
    ids = [h.document.id for h in kb.search("wavefront MFMA LDS", platform="cdna3", limit=20)]
    assert ids[0] == "hardware/amd-cdna3"


def test_unknown_filter_value_is_one_clear_error(kb: KnowledgeBase) -> None:
    with pytest.raises(KnowledgeError, match="unknown platform 'volta'"):
        kb.search("gemm", platform="volta")


def test_query_punctuation_cannot_break_fts_syntax(kb: KnowledgeBase) -> None:
    assert fts_query('tl.dot("a" OR) NEAR(*') == '"tl" OR "dot" OR "near"'
    kb.search('"unbalanced ( quote * AND')  # no exception


def test_bad_front_matter_names_the_file() -> None:
    with pytest.raises(KnowledgeError, match="notes.md: kinds has unknown value"):
        parse_markdown('+++\nkinds = ["speed"]\n+++\nbody', id="x", source="workspace", path="notes.md")


def test_workspace_documents_are_indexed_and_edits_trigger_a_rebuild(tmp_path: Path) -> None:
    docs = tmp_path / ".kernelevolve" / "knowledge"
    docs.mkdir(parents=True)
    note = docs / "team-notes.md"
    note.write_text('+++\ntitle = "Team notes"\nkinds = ["memory"]\n+++\nOur tables use zanzibar layout.\n')
    kb = KnowledgeBase(workspace=tmp_path)
    assert kb.rebuilt
    assert kb.search("zanzibar")[0].document.id == "workspace/team-notes"
    kb2 = KnowledgeBase(workspace=tmp_path)  # same cache file, nothing changed
    assert not kb2.rebuilt
    note.write_text('+++\ntitle = "Team notes"\n+++\nNow about quokka layout.\n')
    os.utime(note, (time.time() + 5, time.time() + 5))
    kb2.refresh()
    assert kb2.rebuilt
    assert kb2.search("zanzibar") == []
    assert kb2.search("quokka")[0].document.id == "workspace/team-notes"


def test_learned_entries_are_searchable(tmp_path: Path) -> None:
    learned = Document(
        id="learned/1",
        title="rmsnorm on hopper: one row per program",
        source="learned",
        path="history:knowledge_entries/1",
        body="Diagnosis: memory bound. Change: fused weight multiply, BLOCK=next_power_of_2.",
        kinds=("memory",),
    )
    kb = KnowledgeBase(cache_path=tmp_path / "kb.sqlite", learned=[learned])
    assert kb.search("rmsnorm fused weight")[0].document.id == "learned/1"
    kb.set_learned([])
    assert kb.rebuilt and kb.get("learned/1") is None


def test_a_bad_workspace_document_is_one_clear_error_or_skipped_when_not_strict(tmp_path: Path) -> None:
    docs = tmp_path / ".kernelevolve" / "knowledge"
    docs.mkdir(parents=True)
    (docs / "good.md").write_text("+++\ntitle = 'Good'\n+++\nwombat tiling notes\n")
    (docs / "bad.md").write_text("+++\nkinds = ['speed']\n+++\nbody\n")
    with pytest.raises(KnowledgeError, match="bad.md: kinds has unknown value"):
        KnowledgeBase(workspace=tmp_path)
    lenient = KnowledgeBase(workspace=tmp_path, strict=False)
    assert len(lenient.problems) == 1 and "bad.md" in lenient.problems[0]
    assert lenient.search("wombat")[0].document.id == "workspace/good"
    with pytest.raises(KnowledgeError, match="bad.md"):  # the cached index remembers the problem
        KnowledgeBase(workspace=tmp_path)
