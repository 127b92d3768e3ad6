"""Tables behind the static anti-cheat: what a candidate's Python may name, import and call.

Everything here is an allow-list except the maps that only pick the *rule name* and wording for
something already outside the allow-list. See ``static_check`` for how they are applied and
docs/problem-format.md ("What a candidate may do") for the user-facing summary.
"""

from __future__ import annotations

# --- imports -------------------------------------------------------------------------------------

# ``import X`` / ``import X as Y``: module -> the local names it may be bound to.
IMPORT_ALIASES: dict[str, frozenset[str]] = {
    "torch": frozenset({"torch"}),
    "torch.nn": frozenset({"nn"}),
    "torch.nn.functional": frozenset({"F"}),  # allowed to import; every use is torch compute
    "triton": frozenset({"triton"}),
    "triton.language": frozenset({"tl"}),
    "triton.language.extra.libdevice": frozenset({"libdevice"}),
    "triton.language.extra.cuda.libdevice": frozenset({"libdevice"}),
    "math": frozenset({"math"}),
    "typing": frozenset({"typing"}),
    "__future__": frozenset({"__future__"}),
}

# ``from M import name``: module -> names that may be imported (under their own name). ``*`` in the
# set: any name (still without ``as`` renaming, except the canonical renames below).
FROM_IMPORTS: dict[str, frozenset[str]] = {
    "torch": frozenset({"nn", "Tensor"}),
    "torch.nn": frozenset({"Module", "Parameter", "functional"}),
    "triton": frozenset({"jit", "autotune", "heuristics", "Config", "cdiv", "next_power_of_2", "language"}),
    "triton.language": frozenset({"*"}),
    "triton.language.extra": frozenset({"libdevice"}),
    "triton.language.extra.cuda": frozenset({"libdevice"}),
    "triton.runtime": frozenset({"driver"}),
    "math": frozenset({"*"}),
    "typing": frozenset({"*"}),
    "__future__": frozenset({"*"}),
}

# Renames that are the community's canonical spelling, so not an obfuscating alias.
CANONICAL_RENAMES: dict[tuple[str, str], str] = {
    ("triton", "language"): "tl",
    ("torch.nn", "functional"): "F",
}

# Modules outside the allow-list that have a more specific rule than ``forbidden-import``.
MODULE_RULES: dict[str, tuple[str, str]] = {}


def _rule(rule: str, why: str, *modules: str) -> None:
    for module in modules:
        MODULE_RULES[module] = (rule, why)


_rule(
    "concurrency",
    "threads, processes and event loops can finish work after the timer stops",
    "threading",
    "_thread",
    "multiprocessing",
    "concurrent",
    "asyncio",
    "subprocess",
    "signal",
    "sched",
    "queue",
)
_rule("native-code", "native code escapes every check", "ctypes", "_ctypes", "cffi", "mmap")
_rule(
    "frame-inspection",
    "it can read the harness's frames and expected outputs",
    "inspect",
    "sys",
    "gc",
    "traceback",
    "types",
    "dis",
    "code",
    "weakref",
)
_rule(
    "io",
    "candidates may not read or write files or the network",
    "os",
    "io",
    "pathlib",
    "socket",
    "urllib",
    "http",
    "requests",
    "shutil",
    "pickle",
    "tempfile",
    "glob",
    "marshal",
    "shelve",
    "sqlite3",
    "ssl",
    "fcntl",
    "posix",
    "json",
)
_rule(
    "dynamic-import", "dynamic imports hide what is used", "importlib", "pkgutil", "runpy", "builtins", "imp"
)
_rule("timer", "a candidate has no business with the clock the harness times it by", "time", "timeit")

# --- builtins ------------------------------------------------------------------------------------

ALLOWED_BUILTINS = frozenset(
    {
        "len", "range", "int", "float", "bool", "str", "tuple", "list", "dict", "set", "frozenset",
        "min", "max", "abs", "isinstance", "issubclass", "enumerate", "zip", "reversed", "sorted",
        "round", "divmod", "pow", "sum", "any", "all", "super", "print", "slice", "iter", "next",
        "callable", "map", "filter", "staticmethod", "classmethod", "property", "repr", "format",
        "ValueError", "TypeError", "RuntimeError", "AssertionError", "NotImplementedError",
        "IndexError", "KeyError", "Exception", "ZeroDivisionError", "NotImplemented", "Ellipsis", "None", "True", "False",
    }
)  # fmt: skip

# Builtins that compute when handed a tensor (``sum(x)``, ``max(x)``, ``float(x)``).
TENSOR_CONSUMING_BUILTINS = frozenset(
    {
        "sum", "min", "max", "abs", "pow", "round", "divmod", "float", "int", "bool", "complex",
        "sorted", "any", "all", "list", "tuple", "iter", "next", "map", "filter", "reversed", "set",
        "frozenset", "hash", "id",
    }
)  # fmt: skip

# Builtins whose result is never a tensor, whatever they are given.
SCALAR_BUILTINS = frozenset(
    {
        "len",
        "isinstance",
        "issubclass",
        "callable",
        "repr",
        "str",
        "format",
        "range",
        "print",
        "int",
        "float",
        "bool",
        "round",
    }
)

BUILTIN_RULES: dict[str, tuple[str, str]] = {
    "getattr": ("introspection", "dynamic attribute access hides what is called"),
    "setattr": ("introspection", "dynamic attribute writes can patch anything"),
    "delattr": ("introspection", "dynamic attribute deletion can patch anything"),
    "hasattr": ("introspection", "dynamic attribute probing is not needed by a kernel launcher"),
    "vars": ("introspection", "vars() exposes namespaces"),
    "globals": ("introspection", "globals() exposes and rewrites the module namespace"),
    "locals": ("introspection", "locals() exposes frames"),
    "dir": ("introspection", "dir() probes namespaces"),
    "type": ("introspection", "type() can build classes at run time"),
    "object": ("introspection", "object is only reachable to bypass attribute machinery"),
    "id": ("introspection", "id() keys caches by object address"),
    "hash": ("introspection", "hash() keys caches by input fingerprint"),
    "memoryview": ("introspection", "memoryview reads raw memory"),
    "__import__": ("dynamic-import", "__import__ hides what is imported"),
    "eval": ("dynamic-code", "eval runs code the checker cannot see"),
    "exec": ("dynamic-code", "exec runs code the checker cannot see"),
    "compile": ("dynamic-code", "compile builds code the checker cannot see"),
    "open": ("io", "candidates may not read or write files"),
    "input": ("io", "candidates may not read stdin"),
    "breakpoint": ("forbidden-builtin", "breakpoint() stops the worker"),
    "exit": ("forbidden-builtin", "exit() ends the worker"),
    "quit": ("forbidden-builtin", "quit() ends the worker"),
}

# --- torch and triton names ----------------------------------------------------------------------

TORCH_ALLOCATORS = frozenset(
    {
        "torch.empty", "torch.empty_like", "torch.empty_strided", "torch.zeros", "torch.zeros_like",
        "torch.ones", "torch.ones_like", "torch.full", "torch.full_like",
    }
)  # fmt: skip

TORCH_DTYPES = frozenset(
    "torch." + n
    for n in (
        "float32", "float", "float16", "half", "bfloat16", "float64", "double", "int8", "int16",
        "int32", "int", "int64", "long", "uint8", "bool", "float8_e4m3fn", "float8_e5m2",
        "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu", "complex64", "complex128", "uint16", "uint32",
        "uint64", "short", "cfloat", "cdouble",
    )
)  # fmt: skip

# Names that describe, query or hold; none computes on tensor data.
TORCH_PLAIN = frozenset(
    {
        "torch.Tensor", "torch.Size", "torch.dtype", "torch.device", "torch.finfo", "torch.iinfo",
        "torch.strided", "torch.contiguous_format", "torch.channels_last", "torch.no_grad",
        "torch.inference_mode", "torch.nn.Module", "torch.nn.Parameter", "torch.cuda.is_available",
        "torch.cuda.current_device", "torch.cuda.get_device_properties",
        "torch.cuda.get_device_capability", "torch.cuda.get_device_name", "torch.cuda.device_count",
        "torch.cuda.device",
    }
)  # fmt: skip

# Context managers a ``with`` block may use.
ALLOWED_CONTEXTS = frozenset({"torch.no_grad", "torch.inference_mode", "torch.cuda.device"})

TORCH_STREAM_NAMES = frozenset(
    {
        "torch.cuda.Stream", "torch.cuda.stream", "torch.cuda.Event", "torch.cuda.graph",
        "torch.cuda.CUDAGraph", "torch.cuda.graphs", "torch.cuda.synchronize", "torch.cuda.current_stream",
        "torch.cuda.default_stream", "torch.cuda.set_stream", "torch.cuda.ExternalStream",
        "torch.cuda.StreamContext", "torch.cuda.make_graphed_callables", "torch.Stream", "torch.Event",
        "torch.cuda.streams", "torch.accelerator",
    }
)  # fmt: skip

TORCH_STATE_PREFIXES = (
    "torch.backends", "torch.manual_seed", "torch.seed", "torch.set_", "torch.use_deterministic",
    "torch.random", "torch.cuda.manual_seed", "torch.cuda.set_", "torch.cuda.memory", "torch.cuda.empty_cache",
    "torch.cuda.caching_allocator", "torch.library", "torch.overrides", "torch.utils", "torch.compiler",
    "torch.cuda.random", "torch.get_rng_state", "torch.cuda.get_rng_state", "torch.Generator",
)  # fmt: skip

# os functions that start or end processes (the rest of os is file IO).
PROCESS_CALLS = frozenset(
    {"os.fork", "os.forkpty", "os.system", "os.popen", "os.kill", "os._exit", "os.spawnl", "os.spawnv",
     "os.execv", "os.execl", "os.execve", "os.posix_spawn", "os.killpg", "os.abort"}
)  # fmt: skip

TORCH_NATIVE_PREFIXES = (
    "torch.utils.cpp_extension",
    "torch.cuda.cudart",
    "torch.utils.dlpack",
    "torch.cuda.nvtx",
)

TRITON_ALLOWED = frozenset(
    {
        "triton.jit", "triton.autotune", "triton.heuristics", "triton.Config", "triton.cdiv",
        "triton.next_power_of_2", "triton.runtime.driver.active.utils.get_device_properties",
        "triton.runtime.driver.active.get_current_device",
        "triton.runtime.driver.active.get_active_torch_device",
    }
)  # fmt: skip
TRITON_LANGUAGE_PREFIXES = ("triton.language", "triton.language.extra")
# Launch hooks: arbitrary Python Triton runs around a launch (pre_hook can write the output).
TRITON_HOOK_TAKERS = frozenset({"triton.Config", "triton.autotune"})
TRITON_HOOK_ARGS = frozenset({"pre_hook", "post_hook"})
# What a grid/heuristics lambda may call on the (dict of) kernel arguments it receives.
META_METHODS = frozenset({"get", "keys", "items", "values"})
KERNEL_DECORATORS = frozenset({"triton.jit"})
ALLOWED_DECORATORS = frozenset(
    {"triton.jit", "triton.autotune", "triton.heuristics", "torch.no_grad", "torch.inference_mode"}
)
ALLOWED_BUILTIN_DECORATORS = frozenset({"staticmethod", "classmethod", "property"})

# Names a @triton.jit body may call without qualification.
KERNEL_BUILTINS = frozenset(
    {
        "range",
        "min",
        "max",
        "len",
        "int",
        "float",
        "bool",
        "abs",
        "print",
        "isinstance",
        "tuple",
        "enumerate",
        "zip",
    }
)

# --- tensor methods and attributes ---------------------------------------------------------------

# Return a view or fresh uninitialised memory: no computation on tensor data.
TENSOR_VIEW_METHODS = frozenset(
    {
        "view", "view_as", "reshape", "reshape_as", "contiguous", "transpose", "permute", "t",
        "expand", "expand_as", "unsqueeze", "squeeze", "flatten", "unflatten", "narrow", "select",
        "as_strided", "split", "chunk", "unbind", "movedim", "swapaxes", "swapdims", "detach",
        "new_empty", "new_empty_strided", "new_zeros", "new_ones", "new_full",
    }
)  # fmt: skip

# Return Python scalars or metadata.
TENSOR_SCALAR_METHODS = frozenset(
    {
        "size", "stride", "numel", "nelement", "dim", "ndimension", "element_size", "data_ptr",
        "is_contiguous", "get_device", "storage_offset", "is_floating_point", "is_complex",
    }
)  # fmt: skip

TENSOR_SCALAR_ATTRS = frozenset(
    {
        "shape", "dtype", "device", "ndim", "is_cuda", "layout", "requires_grad", "itemsize", "nbytes",
        "is_leaf", "training",
        # configuration attributes of nn layers held in __init__ (self.linear.in_features, ...)
        "in_features", "out_features", "num_embeddings", "embedding_dim", "padding_idx", "eps",
        "normalized_shape", "elementwise_affine", "mode", "in_channels", "out_channels", "kernel_size",
        "padding", "dilation", "groups", "num_features", "momentum", "affine", "negative_slope",
        "approximate", "num_heads", "head_dim", "embed_dim", "include_last_offset", "max_norm",
    }
)  # fmt: skip

CAST_METHODS = frozenset(
    {
        "to",
        "float",
        "half",
        "bfloat16",
        "double",
        "int",
        "long",
        "short",
        "bool",
        "type",
        "type_as",
        "char",
        "byte",
        "cpu",
        "cuda",
    }
)

# Common compute methods; referencing one without calling it (``f = x.sum``) is still flagged.
TENSOR_COMPUTE_METHODS = frozenset(
    {
        "sum", "mean", "max", "min", "amax", "amin", "argmax", "argmin", "prod", "cumsum", "cumprod",
        "matmul", "mm", "bmm", "mv", "dot", "addmm", "baddbmm", "einsum", "softmax", "log_softmax",
        "relu", "gelu", "sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt", "pow", "abs", "neg", "add",
        "sub", "mul", "div", "clamp", "clip", "norm", "var", "std", "copy_", "fill_", "zero_", "add_",
        "mul_", "index_select", "gather", "scatter", "scatter_add", "index_add", "masked_fill",
        "where", "clone", "item", "tolist", "numpy", "repeat", "repeat_interleave", "sort", "topk",
        "cat", "stack", "apply_", "map_", "sign", "square", "reciprocal", "erf", "floor", "ceil",
        "round", "trunc", "lerp", "outer", "__add__", "__mul__",
    }
)  # fmt: skip

# Methods that mutate a container in place (caching across calls when the container outlives one).
MUTATING_METHODS = frozenset(
    {
        "append",
        "extend",
        "insert",
        "update",
        "setdefault",
        "pop",
        "popitem",
        "clear",
        "add",
        "remove",
        "discard",
    }
)

# nn.Module methods __init__ may call on self.
INIT_SELF_METHODS = frozenset({"register_buffer", "register_parameter", "add_module"})

# Attributes that walk frames or code objects.
FRAME_ATTRS = frozenset(
    {
        "f_locals",
        "f_back",
        "f_globals",
        "f_code",
        "f_builtins",
        "tb_frame",
        "tb_next",
        "gi_frame",
        "cr_frame",
        "ag_frame",
    }
)

SCALAR_ANNOTATIONS = frozenset(
    {"int", "float", "bool", "str", "tl.constexpr", "triton.language.constexpr", "constexpr"}
)
