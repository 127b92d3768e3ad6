"""Selection policies: which evaluated nodes to expand next.

A policy sees only an abstract ``SearchTree`` (ids, parents, fitness, whether a node is
evaluated or exhausted) and answers ``select(tree, k) -> list[node id]``. It never touches
history, operators or the harness, so each one can be unit-tested on a synthetic fitness
landscape where the right answer is known.

- ``greedy``: best-first; the k fittest expandable nodes.
- ``beam``: a beam of ``width`` nodes per generation; the next generation's beam is the top
  ``width`` among the beam's children and the beam itself (elitism).
- ``mcts``: UCT over the tree, reward = fitness normalised by the best fitness seen; at each
  node the walk may stop and expand that node, or descend into a child.
- ``evolve``: islands. Draft nodes are dealt round-robin to islands, children join their
  parent's island, each island expands its own best, and every ``migration_interval``
  evaluations each island receives the best node of its ring neighbour.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol


@dataclass
class TreeNode:
    id: int
    parent: int | None
    fitness: float = 0.0
    evaluated: bool = False
    exhausted: bool = False  # the operators have nothing new to offer from this node
    children: list[int] = field(default_factory=list)


class SearchTree:
    """The search graph as the policies see it. Node ids are assigned by the caller."""

    def __init__(self) -> None:
        self.nodes: dict[int, TreeNode] = {}
        self.evaluation_order: list[int] = []  # ids in the order their evaluations arrived

    def add(self, node_id: int, parent: int | None) -> TreeNode:
        if node_id in self.nodes:
            raise ValueError(f"node {node_id} already in the tree")
        if parent is not None and parent not in self.nodes:
            raise ValueError(f"parent {parent} of node {node_id} is not in the tree")
        node = TreeNode(node_id, parent)
        self.nodes[node_id] = node
        if parent is not None:
            self.nodes[parent].children.append(node_id)
        return node

    def set_fitness(self, node_id: int, fitness: float) -> None:
        node = self.nodes[node_id]
        node.fitness = max(0.0, fitness)
        if not node.evaluated:
            node.evaluated = True
            self.evaluation_order.append(node_id)

    def mark_exhausted(self, node_id: int) -> None:
        self.nodes[node_id].exhausted = True

    def roots(self) -> list[int]:
        return [n.id for n in self.nodes.values() if n.parent is None]

    def children(self, node_id: int) -> list[int]:
        return list(self.nodes[node_id].children)

    def depth(self, node_id: int) -> int:
        depth = 0
        parent = self.nodes[node_id].parent
        while parent is not None:
            depth += 1
            parent = self.nodes[parent].parent
        return depth

    def expandable(self) -> list[TreeNode]:
        return [n for n in self.nodes.values() if n.evaluated and not n.exhausted]

    def best(self) -> TreeNode | None:
        evaluated = [n for n in self.nodes.values() if n.evaluated]
        if not evaluated:
            return None
        return max(evaluated, key=lambda n: (n.fitness, -n.id))

    @property
    def evaluated_count(self) -> int:
        return len(self.evaluation_order)


class Policy(Protocol):
    name: str

    def select(self, tree: SearchTree, k: int) -> list[int]:
        """Up to ``k`` node ids to expand (a node may repeat); ``[]`` when nothing is expandable."""
        ...


def _rank_key(node: TreeNode) -> tuple[float, int, int]:
    # Fitter first; among equals the node with fewer children (spread the work), then the older.
    return (-node.fitness, len(node.children), node.id)


def _fill(ranked: list[TreeNode], k: int) -> list[int]:
    """Take the first k of ``ranked``; when there are fewer, cycle so every slot gets work."""
    if not ranked or k <= 0:
        return []
    return [ranked[i % len(ranked)].id for i in range(k)]


class GreedyPolicy:
    """Best-first: always expand the fittest nodes."""

    name = "greedy"

    def select(self, tree: SearchTree, k: int) -> list[int]:
        return _fill(sorted(tree.expandable(), key=_rank_key), k)


class BeamPolicy:
    """Beam search: expand the beam; move to the next generation once each member has
    ``fanout`` children (or nothing more to offer)."""

    name = "beam"

    def __init__(self, width: int = 3, fanout: int = 2) -> None:
        if width < 1 or fanout < 1:
            raise ValueError("beam width and fanout must be at least 1")
        self.width = width
        self.fanout = fanout

    def _top(self, tree: SearchTree, ids: list[int]) -> list[int]:
        nodes = [tree.nodes[i] for i in ids if tree.nodes[i].evaluated]
        return [n.id for n in sorted(nodes, key=lambda n: (-n.fitness, n.id))[: self.width]]

    def beam(self, tree: SearchTree) -> list[int]:
        beam = self._top(tree, tree.roots())
        seen: set[tuple[int, ...]] = set()
        while beam and tuple(beam) not in seen:
            seen.add(tuple(beam))
            generation_done = all(
                tree.nodes[b].exhausted or len(tree.nodes[b].children) >= self.fanout for b in beam
            )
            kids = [c for b in beam for c in tree.nodes[b].children]
            if not generation_done or any(not tree.nodes[c].evaluated for c in kids):
                break
            survivors = [b for b in beam if not tree.nodes[b].exhausted]
            nxt = self._top(tree, kids + survivors)
            if not nxt:
                break
            beam = nxt
        return beam

    def select(self, tree: SearchTree, k: int) -> list[int]:
        members = [tree.nodes[b] for b in self.beam(tree) if not tree.nodes[b].exhausted]
        if not members:  # the beam ran dry: fall back to best-first over what is left
            return GreedyPolicy().select(tree, k)
        members.sort(key=lambda n: (len(n.children), -n.fitness, n.id))
        return _fill(members, k)


class MCTSPolicy:
    """UCT over the tree with max backup, the usual choice when the goal is the single best node
    rather than the mean outcome. Reward of a node = its fitness normalised to [0, 1] over the
    evaluated nodes (min..max); value of a subtree = its best reward; visits = evaluated nodes in
    it. At each node the walk either stops there (expand it; counted as visited once per child
    it already has) or descends into the child with the highest upper confidence bound."""

    name = "mcts"

    def __init__(self, exploration: float = 0.7) -> None:
        self.exploration = exploration

    def select(self, tree: SearchTree, k: int) -> list[int]:
        if not tree.expandable() or k <= 0:
            return []
        fits = [n.fitness for n in tree.nodes.values() if n.evaluated]
        low, high = min(fits), max(fits)
        span = high - low if high > low else 1.0

        def reward(node: TreeNode) -> float:
            return (node.fitness - low) / span if node.evaluated else 0.0

        visits: dict[int, int] = {}
        value: dict[int, float] = {}
        open_nodes: dict[int, bool] = {}  # the subtree holds an expandable node

        def stats(node_id: int) -> None:
            node = tree.nodes[node_id]
            n = 1 if node.evaluated else 0
            v = reward(node)
            has_open = node.evaluated and not node.exhausted
            for c in node.children:
                stats(c)
                n += visits[c]
                v = max(v, value[c])
                has_open = has_open or open_nodes[c]
            visits[node_id], value[node_id], open_nodes[node_id] = n, v, has_open

        roots = tree.roots()
        for r in roots:
            stats(r)
        picks: list[int] = []
        pending: dict[int, int] = {}
        for _ in range(k):
            pick = self._walk(tree, roots, reward, visits, value, open_nodes, pending)
            if pick is None:
                break
            picks.append(pick)
            pending[pick] = pending.get(pick, 0) + 1
            # Virtual loss: count the pending expansion along the path so the next walk diverges.
            cur: int | None = pick
            while cur is not None:
                visits[cur] += 1
                cur = tree.nodes[cur].parent
        return picks

    def _ucb(self, value: float, n: int, parent_n: int) -> float:
        return value + self.exploration * math.sqrt(math.log(parent_n + 1) / max(n, 1))

    def _walk(
        self,
        tree: SearchTree,
        roots: list[int],
        reward: Callable[[TreeNode], float],
        visits: dict[int, int],
        value: dict[int, float],
        open_nodes: dict[int, bool],
        pending: dict[int, int],
    ) -> int | None:
        total = sum(visits[r] for r in roots)
        options = [(self._ucb(value[r], visits[r], total), -r, r) for r in roots if open_nodes[r]]
        if not options:
            return None
        current = max(options)[2]
        while True:
            node = tree.nodes[current]
            scored: list[tuple[float, int, int]] = []
            if node.evaluated and not node.exhausted:
                own_visits = 1 + len(node.children) + pending.get(current, 0)
                own = self._ucb(reward(node), own_visits, visits[current])
                scored.append((own, 1, current))
            for c in node.children:
                if open_nodes[c]:
                    scored.append((self._ucb(value[c], visits[c], visits[current]), 0, c))
            if not scored:
                return None
            _, _, choice = max(scored, key=lambda s: (s[0], s[1], -s[2]))
            if choice == current:
                return current
            current = choice


class EvolvePolicy:
    """Islands with ring migration. Draft node i starts island i mod ``islands``; children join
    their parent's island; each island expands its own fittest member; every
    ``migration_interval`` evaluations island j adopts the best node island j-1 had then."""

    name = "evolve"

    def __init__(self, islands: int = 3, migration_interval: int = 8) -> None:
        if islands < 1 or migration_interval < 1:
            raise ValueError("islands and migration_interval must be at least 1")
        self.islands = islands
        self.migration_interval = migration_interval
        self._turn = 0

    def island_of(self, tree: SearchTree) -> dict[int, int]:
        assignment: dict[int, int] = {}
        for i, root in enumerate(sorted(tree.roots())):
            stack = [root]
            while stack:
                node_id = stack.pop()
                assignment[node_id] = i % self.islands
                stack.extend(tree.nodes[node_id].children)
        return assignment

    def populations(self, tree: SearchTree) -> list[list[int]]:
        assignment = self.island_of(tree)
        pops: list[list[int]] = [[] for _ in range(self.islands)]
        for node_id, island in assignment.items():
            pops[island].append(node_id)
        order = tree.evaluation_order
        epochs = len(order) // self.migration_interval
        migrants: list[set[int]] = [set() for _ in range(self.islands)]
        for epoch in range(1, epochs + 1):
            so_far = order[: epoch * self.migration_interval]
            for island in range(self.islands):
                donor = (island - 1) % self.islands
                donors = [i for i in so_far if assignment.get(i) == donor]
                if donors and self.islands > 1:
                    migrants[island].add(max(donors, key=lambda i: (tree.nodes[i].fitness, -i)))
        return [sorted(set(p) | migrants[i]) for i, p in enumerate(pops)]

    def select(self, tree: SearchTree, k: int) -> list[int]:
        pops = self.populations(tree)
        ranked: list[list[TreeNode]] = []
        for pop in pops:
            members = [tree.nodes[i] for i in pop if tree.nodes[i].evaluated and not tree.nodes[i].exhausted]
            ranked.append(sorted(members, key=_rank_key))
        live = [i for i, r in enumerate(ranked) if r]
        if not live or k <= 0:
            return []
        picks: list[int] = []
        taken = [0] * self.islands
        for _ in range(k):
            island = live[self._turn % len(live)]
            self._turn += 1
            members = ranked[island]
            picks.append(members[taken[island] % len(members)].id)
            taken[island] += 1
        return picks


POLICIES = ("greedy", "beam", "mcts", "evolve")


def make_policy(name: str) -> Policy:
    if name == "greedy":
        return GreedyPolicy()
    if name == "beam":
        return BeamPolicy()
    if name == "mcts":
        return MCTSPolicy()
    if name == "evolve":
        return EvolvePolicy()
    raise ValueError(f"unknown strategy {name!r}; choose one of {', '.join(POLICIES)}")
