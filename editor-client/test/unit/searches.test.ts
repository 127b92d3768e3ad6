import assert from "node:assert/strict";
import { test } from "node:test";
import { CandidateNote, RunFinishedNote } from "../../src/protocol";
import { candidateLine, SearchTracker, statusView } from "../../src/searches";

const URI = "file:///w/model.py";

function note(over: Partial<CandidateNote>): CandidateNote {
  return {
    uri: URI,
    jobId: "job1",
    runId: 4,
    candidateId: 1,
    parentId: null,
    operator: "template",
    step: 1,
    verdict: "correct",
    stage: "done",
    reason: null,
    speedup: 1.5,
    timing: "modelled",
    device: "H200",
    diff: "--- a/x\n+++ b/x\n",
    isBest: true,
    bestSpeedup: 1.5,
    ...over,
  };
}

function finished(over: Partial<RunFinishedNote>): RunFinishedNote {
  return {
    uri: URI,
    jobId: "job1",
    runId: 4,
    status: "finished",
    reason: "",
    evaluated: 3,
    bestCandidateId: 2,
    bestSpeedup: 2.25,
    timing: "measured",
    device: "H200",
    kernelPath: "/w/k.py",
    ...over,
  };
}

test("the status bar is hidden until a search starts", () => {
  assert.equal(statusView(new SearchTracker()).visible, false);
});

test("a running search shows its op, evaluated count and best so far", () => {
  const t = new SearchTracker();
  t.started(URI, { jobId: "job1", token: "tok", problemPath: "/w/p.py", op: "Model", joined: false });
  assert.match(statusView(t).text, /^\$\(sync~spin\) Model: 0 evaluated · searching$/);
  t.onCandidate(note({ candidateId: 1, speedup: 1.5 }));
  t.onCandidate(note({ candidateId: 2, verdict: "incorrect", speedup: null, timing: null, reason: "max abs err 3.1" }));
  t.onCandidate(note({ candidateId: 3, speedup: 1.2 }));
  const view = statusView(t);
  assert.equal(view.text, "$(sync~spin) Model: 3 evaluated · ≈1.50× modelled H200");
  assert.equal(t.get("job1")?.best?.candidateId, 1, "a rejected or slower candidate never becomes best");
});

test("measured timings are labelled measured", () => {
  const t = new SearchTracker();
  t.onCandidate(note({ timing: "measured", speedup: 2.3 }));
  assert.match(statusView(t).text, /⚡ 2\.30× measured H200/);
});

test("several running searches are summed; a finished one then shows its result", () => {
  const t = new SearchTracker();
  t.onCandidate(note({ jobId: "a" }));
  t.onCandidate(note({ jobId: "b", candidateId: 9 }));
  t.onCandidate(note({ jobId: "b", candidateId: 10 }));
  assert.equal(statusView(t).text, "$(sync~spin) 2 kernel searches · 3 evaluated");
  t.onRunFinished(finished({ jobId: "a" }));
  assert.match(statusView(t).text, /^\$\(sync~spin\) model\.py: 2 evaluated/);
  t.onRunFinished(finished({ jobId: "b", status: "cancelled", bestCandidateId: null, bestSpeedup: null }));
  const view = statusView(t);
  assert.equal(view.text, "$(circle-slash) model.py: ≈1.50× modelled H200");
  assert.equal(t.running().length, 0);
});

test("runFinished carries the final best, and the tooltip says why a run stopped", () => {
  const t = new SearchTracker();
  t.onCandidate(note({}));
  t.onRunFinished(finished({ reason: "patience exhausted" }));
  const view = statusView(t);
  assert.equal(view.text, "$(check) model.py: ⚡ 2.25× measured H200");
  assert.match(view.tooltip, /finished: 3 evaluated/);
  assert.match(view.tooltip, /patience exhausted/);
});

test("a stopped server leaves no search marked running", () => {
  const t = new SearchTracker();
  t.onCandidate(note({}));
  t.serverStopped();
  assert.equal(t.running().length, 0);
  assert.match(statusView(t).tooltip, /the language server stopped/);
});

test("listeners hear every change and can unsubscribe", () => {
  const t = new SearchTracker();
  let heard = 0;
  const sub = t.onDidChange(() => heard++);
  t.onCandidate(note({}));
  sub.dispose();
  t.onCandidate(note({ candidateId: 2 }));
  assert.equal(heard, 1);
});

test("a rejected candidate's line names its stage and the first line of its reason", () => {
  const line = candidateLine(
    note({ candidateId: 7, verdict: "incorrect", speedup: null, stage: "correctness", reason: "max abs err 0.5\nmore", isBest: false }),
  );
  assert.equal(line, "#7 incorrect (correctness: max abs err 0.5) · template, step 1");
  assert.equal(candidateLine(note({})), "#1 correct ≈1.50× modelled H200 ★ best · template, step 1");
});
