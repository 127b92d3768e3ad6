-- Headless Neovim (0.7+) as a second, independent LSP client of `kernelevolve serve`:
-- code action -> workspace/executeCommand -> $/progress -> kernelEvolve/candidate ->
-- kernelEvolve/runFinished -> hover. Everything seen is written as JSON to $KE_OUT, where the
-- pytest side (test_neovim.py) makes its assertions.
local out_path = assert(os.getenv("KE_OUT"), "KE_OUT not set")
local python = assert(os.getenv("KE_PYTHON"), "KE_PYTHON not set")
local seed = os.getenv("KE_SEED")
local wait_s = tonumber(os.getenv("KE_WAIT_S") or "300")

local seen = { candidates = {}, finished = {}, progress = {}, messages = {}, errors = {} }

local function record_progress(err, result, ctx, config)
  table.insert(seen.progress, result)
  return vim.lsp.handlers["$/progress"](err, result, ctx, config)
end

local id = vim.lsp.start_client({
  name = "kernelevolve",
  cmd = { python, "-m", "kernelevolve.server.lsp" },
  root_dir = vim.fn.getcwd(),
  init_options = { settings = { maxSteps = 2, draftSize = 1, patience = 2, parallel = 1 } },
  handlers = {
    ["kernelEvolve/candidate"] = function(_, result) table.insert(seen.candidates, result) end,
    ["kernelEvolve/runFinished"] = function(_, result) table.insert(seen.finished, result) end,
    ["window/showMessage"] = function(_, result) table.insert(seen.messages, result) end,
    ["$/progress"] = record_progress,
  },
})

local function finish()
  local file = assert(io.open(out_path, "w"))
  file:write(vim.fn.json_encode(seen))
  file:close()
  if id then vim.lsp.stop_client(id) end
  vim.wait(3000, function() return vim.lsp.get_client_by_id(id) == nil end, 100)
  vim.cmd("qa!")
end

local ok, problem = pcall(function()
  vim.lsp.buf_attach_client(0, id)
  local client = vim.lsp.get_client_by_id(id)
  assert(vim.wait(30000, function() return client.initialized end, 50), "server never initialized")
  local model_line = vim.fn.search("^class Model") - 1
  seen.model_line = model_line

  local params = {
    textDocument = { uri = vim.uri_from_bufnr(0) },
    range = { start = { line = model_line, character = 0 }, ["end"] = { line = model_line, character = 5 } },
    context = { diagnostics = {} },
  }
  local replies = vim.lsp.buf_request_sync(0, "textDocument/codeAction", params, 30000)
  local actions = replies[id].result
  seen.action_titles = vim.tbl_map(function(a) return a.title end, actions)
  local command = actions[1].command
  local arguments = vim.deepcopy(command.arguments)
  if seed then arguments[1].seedPath = seed end

  local started = vim.lsp.buf_request_sync(0, "workspace/executeCommand",
    { command = command.command, arguments = arguments }, 30000)
  seen.started = started[id].result

  assert(vim.wait(wait_s * 1000, function() return #seen.finished > 0 end, 200), "run never finished")

  local hover = vim.lsp.buf_request_sync(0, "textDocument/hover", {
    textDocument = { uri = vim.uri_from_bufnr(0) },
    position = { line = model_line, character = 7 },
  }, 30000)
  seen.hover = hover[id].result
  local hints = vim.lsp.buf_request_sync(0, "textDocument/inlayHint", {
    textDocument = { uri = vim.uri_from_bufnr(0) },
    range = { start = { line = 0, character = 0 }, ["end"] = { line = 200, character = 0 } },
  }, 30000)
  seen.hints = hints[id].result
end)
if not ok then table.insert(seen.errors, tostring(problem)) end
finish()
