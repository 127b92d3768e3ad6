"""Selection policies on synthetic fitness landscapes where the optimum is known.

Each search step asks the policy for a node, then a neighbour operator proposes one unseen
lattice neighbour of it (like the tuning operator proposing one new variant). A random policy
is the control: every landscape/budget pair below is one where it fails.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable

import pytest
from kernelevolve.search.policies import (
    BeamPolicy,
    EvolvePolicy,
    GreedyPolicy,
    MCTSPolicy,
    Policy,
    SearchTree,
    make_policy,
)

Point = tuple[int, int]
LO, HI = 0, 30
SEEDS = range(6)


def smooth(p: Point) -> float:
    """One hill, optimum 1.0 at (24, 24), far from the start at (0, 0)."""
    x, y = p
    return math.exp(-((x - 24) ** 2 + (y - 24) ** 2) / (2 * 12**2))


def deceptive(p: Point) -> float:
    """A broad hill of height 0.6 around the better draft, the real optimum 1.0 at (25, 25)
    on the slope of the worse draft."""
    x, y = p
    local = 0.6 * math.exp(-((x - 5) ** 2 + (y - 5) ** 2) / (2 * 8**2))
    target = math.exp(-((x - 25) ** 2 + (y - 25) ** 2) / (2 * 6**2))
    return max(local, target)


class RandomPolicy:
    name = "random"

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def select(self, tree: SearchTree, k: int) -> list[int]:
        nodes = tree.expandable()
        return [self.rng.choice(nodes).id for _ in range(k)] if nodes else []


def search(
    policy: Policy, f: Callable[[Point], float], starts: list[Point], budget: int, seed: int, k: int = 1
) -> tuple[float, Point]:
    rng = random.Random(seed)
    tree = SearchTree()
    where: dict[int, Point] = {}
    seen: set[Point] = set()
    for start in starts:
        node_id = len(where)
        tree.add(node_id, None)
        where[node_id] = start
        seen.add(start)
        tree.set_fitness(node_id, f(start))
    while tree.evaluated_count < budget:
        picks = policy.select(tree, k)
        if not picks:
            break
        for parent in picks:
            x, y = where[parent]
            fresh = [
                q
                for q in ((x - 1, y), (x + 1, y), (x, y - 1), (x, y + 1))
                if LO <= q[0] <= HI and LO <= q[1] <= HI and q not in seen
            ]
            if not fresh:
                tree.mark_exhausted(parent)
                continue
            q = rng.choice(fresh)
            seen.add(q)
            node_id = len(where)
            tree.add(node_id, parent)
            where[node_id] = q
            tree.set_fitness(node_id, f(q))
    best = tree.best()
    assert best is not None
    return best.fitness, where[best.id]


def test_greedy_climbs_a_smooth_hill_that_random_selection_does_not() -> None:
    for seed in SEEDS:
        assert search(GreedyPolicy(), smooth, [(0, 0)], 80, seed) == (1.0, (24, 24))
        assert search(RandomPolicy(seed), smooth, [(0, 0)], 80, seed)[0] < 0.3


def test_beam_climbs_a_smooth_hill_that_random_selection_does_not() -> None:
    for seed in SEEDS:
        assert search(BeamPolicy(width=3, fanout=2), smooth, [(0, 0)], 250, seed) == (1.0, (24, 24))
        assert search(RandomPolicy(seed), smooth, [(0, 0)], 250, seed)[0] < 0.6


@pytest.mark.parametrize("policy", [MCTSPolicy, EvolvePolicy])
def test_policy_escapes_the_deceptive_hill_where_greedy_and_random_stay(policy: type) -> None:
    drafts = [(5, 5), (20, 20)]
    for seed in SEEDS:
        assert search(policy(), deceptive, drafts, 100, seed) == (1.0, (25, 25))
        assert search(GreedyPolicy(), deceptive, drafts, 100, seed)[0] < 0.7
        assert search(RandomPolicy(seed), deceptive, drafts, 100, seed)[0] < 1.0


@pytest.mark.parametrize("name", ["greedy", "beam", "mcts", "evolve"])
def test_batched_selection_still_finds_the_optimum(name: str) -> None:
    # Four picks per round explore wider, so the budget is larger than for one pick per round.
    fitness, point = search(make_policy(name), smooth, [(0, 0)], 400, seed=0, k=4)
    assert (fitness, point) == (1.0, (24, 24))


@pytest.mark.parametrize("name", ["greedy", "beam", "mcts", "evolve"])
def test_nothing_to_select_when_every_node_is_exhausted(name: str) -> None:
    tree = SearchTree()
    assert make_policy(name).select(tree, 2) == []
    tree.add(1, None)
    assert make_policy(name).select(tree, 2) == []  # pending, not evaluated yet
    tree.set_fitness(1, 1.5)
    assert make_policy(name).select(tree, 2) == [1, 1]
    tree.mark_exhausted(1)
    assert make_policy(name).select(tree, 2) == []


def test_mcts_spreads_a_batch_over_branches() -> None:
    tree = SearchTree()
    for root, fit in ((1, 1.0), (2, 0.9), (3, 0.8)):
        tree.add(root, None)
        tree.set_fitness(root, fit)
    picks = MCTSPolicy().select(tree, 6)
    assert picks[0] == 1 and len(picks) == 6 and len(set(picks)) >= 2


def test_evolve_islands_receive_the_neighbours_best_after_migration() -> None:
    policy = EvolvePolicy(islands=2, migration_interval=2)
    tree = SearchTree()
    tree.add(1, None)
    tree.add(2, None)
    tree.set_fitness(1, 3.0)
    assert policy.populations(tree) == [[1], [2]]
    tree.set_fitness(2, 1.0)  # second evaluation: first migration epoch
    assert policy.populations(tree) == [[1, 2], [1, 2]]


def test_unknown_strategy_is_one_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown strategy 'annealing'"):
        make_policy("annealing")
