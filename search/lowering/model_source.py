"""What a generated ModelNew copies from the problem: its constructor and forward signature.

The harness loads the reference's state_dict into ModelNew when keys and shapes match, so ModelNew
builds exactly the parameters and buffers Model builds: its ``__init__`` is Model's, verbatim
(``super(Model, self)`` becomes ``super()``), plus the module-level names it reads.
"""

from __future__ import annotations

import ast
import builtins
import textwrap
from dataclasses import dataclass

from kernelevolve.search.lowering.pointwise_ops import LoweringError

PROVIDED = {"torch", "nn", "triton", "tl", "math", "self", "super"}
# Random initialisers as allocation + nn.init, which draw the same numbers from the same generator
# (torch.randn is empty().normal_(), torch.rand is empty().uniform_()); weights get loaded anyway.
RANDOM_INIT = {
    "randn": ("normal_", "empty"),
    "rand": ("uniform_", "empty"),
    "randn_like": ("normal_", "empty_like"),
    "rand_like": ("uniform_", "empty_like"),
}


class _RandomToInit(ast.NodeTransformer):
    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "torch"
            and func.attr in RANDOM_INIT
        ):
            init, alloc = RANDOM_INIT[func.attr]
            empty = ast.Call(
                func=ast.Attribute(value=ast.Name("torch", ast.Load()), attr=alloc, ctx=ast.Load()),
                args=node.args,
                keywords=[k for k in node.keywords if k.arg != "generator"],
            )
            init_fn = ast.Attribute(
                value=ast.Attribute(value=ast.Name("nn", ast.Load()), attr="init", ctx=ast.Load()),
                attr=init,
                ctx=ast.Load(),
            )
            return ast.copy_location(ast.Call(func=init_fn, args=[empty], keywords=[]), node)
        return node


@dataclass
class ModelParts:
    init: str  # the __init__ method source, indented for a class body ("" when Model has none)
    forward_args: str  # the forward signature after self, e.g. "x, r" or "x, scale=2.0"
    prelude: str  # module-level imports/constants the constructor needs


def _free_names(func: ast.FunctionDef) -> set[str]:
    bound = {a.arg for a in func.args.args + func.args.kwonlyargs}
    if func.args.vararg:
        bound.add(func.args.vararg.arg)
    if func.args.kwarg:
        bound.add(func.args.kwarg.arg)
    for node in ast.walk(func):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
    loads = {n.id for n in ast.walk(func) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return loads - bound - set(dir(builtins)) - PROVIDED


def model_parts(problem_source: str) -> ModelParts:
    tree = ast.parse(problem_source)
    model = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model"), None)
    if model is None:
        raise LoweringError("problem has no class Model")
    methods = {n.name: n for n in model.body if isinstance(n, ast.FunctionDef)}
    forward = methods.get("forward")
    if forward is None:
        raise LoweringError("Model has no forward method")
    fargs = forward.args
    fargs_copy = ast.arguments(
        posonlyargs=fargs.posonlyargs,
        args=fargs.args[1:],
        vararg=fargs.vararg,
        kwonlyargs=fargs.kwonlyargs,
        kw_defaults=fargs.kw_defaults,
        kwarg=fargs.kwarg,
        defaults=fargs.defaults[-len(fargs.args[1:]) :] if fargs.defaults and fargs.args[1:] else [],
    )
    forward_args = ast.unparse(fargs_copy)
    init = methods.get("__init__")
    if init is None:
        return ModelParts("", forward_args, "")
    segment = ast.get_source_segment(problem_source, init)
    if segment is None:
        raise LoweringError("cannot read Model.__init__ source")
    body = textwrap.dedent(" " * init.col_offset + segment)
    func = ast.parse(body).body[0]
    if any(isinstance(n, ast.Attribute) and n.attr in RANDOM_INIT for n in ast.walk(func)):
        body = ast.unparse(ast.fix_missing_locations(_RandomToInit().visit(func))) + "\n"
    body = body.replace("super(Model, self).__init__(", "super().__init__(")
    needed = _free_names(init)
    prelude: list[str] = []
    for node in tree.body:
        names: set[str] = set()
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.Assign):
            names = {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names = {node.target.id}
        elif isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name != "Model":
            names = {node.name}
        if names & needed:
            seg = ast.get_source_segment(problem_source, node)
            if seg:
                prelude.append(seg)
            needed -= names
    if needed:
        raise LoweringError(f"Model.__init__ reads names the problem does not define: {sorted(needed)}")
    return ModelParts(textwrap.indent(body, "    "), forward_args, "\n".join(prelude))


def attr_path(target: str) -> str:
    """``layers.0.weight`` -> ``self.layers[0].weight``."""
    out = "self"
    for part in target.split("."):
        out += f"[{part}]" if part.isdigit() else f".{part}"
    return out


def skeleton_init(problem_source: str, tensors: list[tuple[str, str, list[int], str, bool]]) -> str:
    """An ``__init__`` with Model's signature that only allocates Model's parameters and buffers.

    ``tensors``: (kind, dotted target, shape, dtype, persistent). The harness loads the reference's
    state_dict into ModelNew, so allocation (torch.empty) is enough; this is the fallback when the
    copied constructor computes on tensors (``1.0 + 0.1 * torch.randn(d)``), which the static check
    forbids in a candidate.
    """
    tree = ast.parse(problem_source)
    model = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model")
    init = next((n for n in model.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    signature = ast.unparse(init.args) if init is not None else "self"
    lines = [f"def __init__({signature}):", "    super().__init__()"]
    made: set[str] = set()
    children: dict[str, set[str]] = {}
    for _, target, _, _, _ in tensors:
        parts = target.split(".")
        for i in range(1, len(parts)):
            children.setdefault(".".join(parts[:i]), set()).add(parts[i])
    for kind, target, shape, dtype, persistent in tensors:
        parts = target.split(".")
        if parts[-1].isdigit():
            raise LoweringError(f"parameter {target}: list-held tensors are not covered")
        for i in range(1, len(parts)):
            prefix = ".".join(parts[:i])
            if prefix in made:
                continue
            made.add(prefix)
            keys = children.get(prefix, set())
            parent = attr_path(".".join(parts[: i - 1])) if i > 1 else "self"
            if parts[i - 1].isdigit():
                continue  # created by its ModuleList
            if keys and all(k.isdigit() for k in keys):
                count = max(int(k) for k in keys) + 1
                lines.append(
                    f"    {parent}.{parts[i - 1]} = nn.ModuleList([nn.Module() for _ in range({count})])"
                )
            else:
                lines.append(f"    {parent}.{parts[i - 1]} = nn.Module()")
        owner = attr_path(".".join(parts[:-1])) if len(parts) > 1 else "self"
        alloc = f"torch.empty({tuple(shape)!r}, dtype=torch.{dtype})"
        if kind == "parameter":
            grad = "" if dtype in ("float32", "float16", "bfloat16", "float64") else ", requires_grad=False"
            lines.append(f"    {owner}.{parts[-1]} = nn.Parameter({alloc}{grad})")
        else:
            if not persistent:
                raise LoweringError(f"buffer {target} is not in the state_dict: its values cannot be loaded")
            lines.append(f"    {owner}.{parts[-1]} = nn.Buffer({alloc})")
    return textwrap.indent("\n".join(lines) + "\n", "    ")
