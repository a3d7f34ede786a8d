-- The sandbox limits at work: a decoder that loops forever on lines with
-- LOOP, allocates without bound on HOG and emits a 10 MB string on BIG.
-- Every other line comes out untouched on stdout; each bad line lands in the
-- dead-letter file with its reason; the run ends by itself at end of input.
--
--   build/lumberjit -c examples/sandbox-limits.lua < examples/data/limits.txt

lumberjit = {
  dead_letter_path = "sandbox-limits.dead-letter.log",
}

stdin = {
  type = "stdin_input",
  decoder = "misbehaving",
}

misbehaving = {
  type = "decoder",
  filename = "plugins/misbehaving.lua",
  cpu_limit_ms = 100,                -- stops LOOP
  memory_limit = 32 * 1024 * 1024,   -- stops HOG (and leaves room for BIG's string)
  output_limit = 1024 * 1024,        -- stops BIG
  max_failures = 1000,               -- keep going: this decoder fails on purpose
}

stdout = {
  type = "stdout_output",
  message_matcher = "TRUE",          -- no encoder: the payload as it is
}
