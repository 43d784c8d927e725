-- Exercises virtperf's sysbench Lua API: options, command line, random
-- numbers, SQL on the configured driver (queries, result sets, prepared
-- statements, bulk inserts, errors), the thread functions, hooks, custom
-- commands, reports and the FFI functions. Asserts as it goes and prints
-- lines tests/lua.rs checks.

sysbench.cmdline.options = {
   rows = {"rows to load", 40},
   label = {"a text option", "abc"},
   loud = {"a flag", false},
   parts = {"a list", {"x", "y"}},
   count = {"an integer option", 3, sysbench.cmdline.ARG_INT},
}

local function check_options()
   local o = sysbench.opt
   assert(type(o.rows) == "number", "rows is a number")
   assert(type(o.label) == "string", "label is a string")
   assert(type(o.loud) == "boolean", "loud is a boolean")
   assert(type(o.parts) == "table", "parts is a list")
   assert(o.count == math.floor(o.count), "count is whole")
   assert(o.threads >= 1 and o.percentile == 95, "general options are there")
   return string.format("opt rows=%d label=%s loud=%s parts=%s count=%d",
                        o.rows, o.label, tostring(o.loud),
                        table.concat(o.parts, "+"), o.count)
end

local function create(con)
   con:query("CREATE TABLE api_t (id INTEGER PRIMARY KEY, v INTEGER NOT NULL, s VARCHAR(20))")
   con:bulk_insert_init("INSERT INTO api_t (id, v, s) VALUES")
   for i = 1, sysbench.opt.rows do
      con:bulk_insert_next(string.format("(%d, %d, '%s')", i, i * 10,
                                         sysbench.rand.string("@@##")))
   end
   con:bulk_insert_done()
end

sysbench.cmdline.commands = {
   fill = { function()
      local con = sysbench.sql.driver():connect()
      create(con)
      local n = con:query_row("SELECT COUNT(*) FROM api_t")
      print("fill rows " .. n)
      con:disconnect()
   end },
   wave = { function()
      print("wave from thread " .. sysbench.tid)
   end, sysbench.cmdline.PARALLEL_COMMAND },
}

function prepare()
   create(sysbench.sql.driver():connect())
   print("prepared " .. sysbench.opt.rows)
end

function cleanup()
   local con = sysbench.sql.driver():connect()
   con:query("DROP TABLE IF EXISTS api_t")
   print("cleaned")
end

function init()
   print(check_options())
   print("command " .. sysbench.cmdline.command .. " argv0 " .. sysbench.cmdline.argv[0] ..
         " script " .. sysbench.cmdline.script_path)
   -- Every distribution stays in its range.
   for _ = 1, 2000 do
      for _, f in ipairs({"uniform", "gaussian", "special", "pareto", "zipfian", "default"}) do
         local x = sysbench.rand[f](5, 50)
         assert(x >= 5 and x <= 50 and x == math.floor(x), f .. " gave " .. x)
      end
      local d = sysbench.rand.uniform_double()
      assert(d >= 0 and d < 1, "uniform_double gave " .. d)
      local v = sysbench.rand.varstring(2, 6)
      assert(#v >= 2 and #v <= 6, "varstring length " .. #v)
   end
   assert(sysbench.rand.uniform_uint64() >= 0)
   local u1, u2 = sysbench.rand.unique(), sysbench.rand.unique()
   assert(u1 ~= u2, "unique repeats")
   local s = sysbench.rand.string("##-@@")
   assert(s:match("^%d%d%-%l%l$"), "string template gave " .. s)
   print("rand ok " .. sysbench.rand.default(1, 1000000))
   -- An unknown sysbench function is named.
   local ok, err = pcall(function() return sysbench.rand.nosuch(1, 2) end)
   assert(not ok and err:find("sysbench.rand.nosuch"), "unknown name: " .. tostring(err))
   print("version " .. sysbench.version)
end

local seen = 0

function thread_init(tid)
   assert(tid == sysbench.tid, "thread_init's argument is sysbench.tid")
   drv = sysbench.sql.driver()
   assert(drv:name() == "pgsql" or drv:name() == "mysql", "driver name " .. drv:name())
   con = drv:connect()
   stmt = con:prepare("SELECT v, s FROM api_t WHERE id = ?")
   param = stmt:bind_create(sysbench.sql.type.INT)
   stmt:bind_param(param)
   upd = con:prepare("UPDATE api_t SET s = ? WHERE id = ?")
   us = upd:bind_create(sysbench.sql.type.VARCHAR, 20)
   ui = upd:bind_create(sysbench.sql.type.INT)
   upd:bind_param(us, ui)
end

function event(tid)
   seen = seen + 1
   local id = sysbench.rand.uniform(1, sysbench.opt.rows)
   param:set(id)
   local rs = stmt:execute()
   assert(rs.nrows == 1 and rs.nfields == 2, "one row of two fields")
   local row = rs:fetch_row()
   assert(tonumber(row[1]) == id * 10, "row " .. id .. " has v " .. tostring(row[1]))
   assert(rs:fetch_row() == nil, "one row only")
   rs:free()
   us:set_rand_str("@@@@")
   ui:set(id)
   upd:execute()
   local v = con:query_row("SELECT v FROM api_t WHERE id = " .. id)
   assert(tonumber(v) == id * 10)
   local all = con:query("SELECT id, NULL FROM api_t ORDER BY id")
   assert(all.nrows == sysbench.opt.rows)
   for i = 1, 3 do
      local r = all:fetch_row()
      assert(tonumber(r[1]) == i and r[2] == nil, "row " .. i .. " in order, NULL as nil")
   end
   -- As in sysbench, a connection has one result: the next query replaces
   -- it, and what was fetched stays fetched.
   con:query("SELECT 1")
   assert(all.nrows == 1 and tonumber(all:fetch_row()[1]) == 1, "the newest result")
   -- A failing statement raises sysbench's error.
   local ok, err = pcall(function() con:query("SELECT nosuch FROM api_t") end)
   assert(not ok and tostring(err):find("SQL error"), "SQL error: " .. tostring(err))
   ffi.C.sb_counter_inc(sysbench.tid, ffi.C.SB_CNT_OTHER)
   ffi.C.usleep(100)
end

function thread_done(tid)
   print(string.format("thread_done %d after %d events", tid, seen))
   con:disconnect()
end

function done()
   print("done")
end

sysbench.hooks.report_cumulative = function(stat)
   print(string.format("cumulative events=%d reads=%d writes=%d other=%d",
                       stat.events, stat.reads, stat.writes, stat.other))
   sysbench.report_csv(stat)
   sysbench.report_default(stat)
end
