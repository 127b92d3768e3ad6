"""`python -m kernelevolve.server.lsp`: the language server over stdio (same as `kernelevolve serve`)."""

from __future__ import annotations

from kernelevolve.server.commands.serve import main

raise SystemExit(main())
