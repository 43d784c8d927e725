-- virtperf's sysbench API for Lua scripts, run in every Lua state before the
-- script. `vp` (this chunk's argument) holds the functions written in Rust;
-- this file shapes them into sysbench 1.0's tables: sysbench.rand,
-- sysbench.sql (driver, connection, statement, result), sysbench.cmdline,
-- sysbench.hooks, the report functions, and the FFI names scripts call
-- through ffi.C. Reads of a sysbench.* name that the API does not have
-- raise an error naming it.

local vp = ...
local real_ffi = require("ffi")

-- Declarations sysbench scripts rely on being there (sysbench declares
-- them in its own Lua modules): counters, the event hooks, usleep.
real_ffi.cdef[[
typedef enum {
  SB_CNT_OTHER, SB_CNT_READ, SB_CNT_WRITE, SB_CNT_TRX, SB_CNT_ERROR,
  SB_CNT_RECONNECT, SB_CNT_MAX
} sb_counter_type;
typedef enum { DB_ERROR_NONE, DB_ERROR_IGNORABLE, DB_ERROR_FATAL } sql_error_t;
typedef enum {
  SQL_TYPE_NONE, SQL_TYPE_TINYINT, SQL_TYPE_SMALLINT, SQL_TYPE_INT,
  SQL_TYPE_BIGINT, SQL_TYPE_FLOAT, SQL_TYPE_DOUBLE, SQL_TYPE_TIME,
  SQL_TYPE_DATE, SQL_TYPE_DATETIME, SQL_TYPE_TIMESTAMP, SQL_TYPE_CHAR,
  SQL_TYPE_VARCHAR
} sql_bind_type_t;
typedef enum {
  SB_ARG_TYPE_NULL, SB_ARG_TYPE_BOOL, SB_ARG_TYPE_INT, SB_ARG_TYPE_SIZE,
  SB_ARG_TYPE_DOUBLE, SB_ARG_TYPE_STRING, SB_ARG_TYPE_LIST, SB_ARG_TYPE_FILE,
  SB_ARG_TYPE_MAX
} sb_arg_type_t;
typedef struct {
  uint32_t threads_running; double time_interval; double time_total;
  double latency_pct; uint64_t events; uint64_t reads; uint64_t writes;
  uint64_t other; uint64_t errors; uint64_t reconnects;
} sb_report_t;
void sb_counter_inc(int thread_id, sb_counter_type type);
void sb_event_start(int thread_id);
void sb_event_stop(int thread_id);
bool sb_more_events(int thread_id);
int usleep(unsigned int useconds);
]]

-- A static binary has no symbol table for ffi.C to look names up in, so
-- the functions scripts call through it are provided here; other names
-- (enum constants, declared types) still come from the real namespace.
local C_funcs = {
   sb_counter_inc = function(tid, kind) vp.counter_inc(tonumber(kind)) end,
   sb_event_start = function() end,
   sb_event_stop = function() end,
   sb_more_events = function() return true end,
   usleep = function(us) vp.usleep(tonumber(us)) return 0 end,
   sleep = function(s) vp.usleep(tonumber(s) * 1e6) return 0 end,
   sb_rand_default = function(a, b) return vp.rand_default(a, b) end,
   sb_rand_uniform = function(a, b) return vp.rand_uniform(a, b) end,
   sb_rand_gaussian = function(a, b) return vp.rand_gaussian(a, b) end,
   sb_rand_special = function(a, b) return vp.rand_special(a, b) end,
   sb_rand_pareto = function(a, b) return vp.rand_pareto(a, b) end,
   sb_rand_zipfian = function(a, b) return vp.rand_zipfian(a, b) end,
   sb_rand_unique = function() return vp.rand_unique() end,
   sb_rand_uniform_double = function() return vp.rand_double() end,
   sb_rand_uniform_uint64 = function() return vp.rand_uint64() end,
}
local C = setmetatable({}, {
   __index = function(_, name)
      local f = C_funcs[name]
      if f ~= nil then return f end
      local ok, v = pcall(function() return real_ffi.C[name] end)
      if ok then return v end
      error("ffi.C." .. tostring(name) .. " is not available in virtperf's " ..
            "static binary (only sysbench's own functions are)", 2)
   end,
})
ffi = setmetatable({ C = C }, { __index = real_ffi })
package.loaded.ffi = ffi

-- Output goes through virtperf's standard output, in order with its own.
local write = vp.write

-- sysbench's log: a line the same as the one before is counted, not
-- printed, and the count is said before the next different line.
local last_line, repeated = nil, 0
local function log_text(line)
   if line == last_line then
      repeated = repeated + 1
      return
   end
   if repeated > 0 then
      write("(last message repeated " .. repeated .. " times)\n")
   end
   last_line, repeated = line, 0
   write(line)
end
function print(...)
   local n = select("#", ...)
   local parts = {}
   for i = 1, n do
      parts[i] = tostring((select(i, ...)))
   end
   write(table.concat(parts, "\t") .. "\n")
end
local real_stdout = io.stdout
local stdout = setmetatable({}, {
   __index = function(_, k)
      local m = real_stdout[k]
      if type(m) == "function" then
         return function(_, ...) return m(real_stdout, ...) end
      end
      return m
   end,
   __tostring = function() return tostring(real_stdout) end,
})
function stdout.write(_, ...)
   for i = 1, select("#", ...) do
      write(tostring((select(i, ...))))
   end
   return stdout
end
function stdout.flush() return true end
io.stdout = stdout
function io.write(...)
   return stdout:write(...)
end

-- Reading a name the API lacks is an error that names it.
local function strict(t, path)
   return setmetatable(t, {
      __index = function(_, k)
         error(string.format("%s.%s is not part of the sysbench API " ..
                             "(virtperf does not provide it)", path,
                             tostring(k)), 2)
      end,
   })
end

sysbench = {}
sysbench.tid = vp.tid
sysbench.version = "1.0.20"
-- As sysbench's: started as sysbench, the name and version alone.
sysbench.version_string = vp.argv[0] == "sysbench" and "sysbench 1.0.20"
   or "sysbench 1.0.20 (virtperf " .. vp.version .. ")"
sysbench.opt = vp.opt or {}
sysbench.error = { NONE = 0, RESTART_EVENT = 1 }
sysbench.hooks = {}

-- sysbench.cmdline ------------------------------------------------------

sysbench.cmdline = {
   argv = vp.argv,
   command = vp.command,
   script_path = vp.script_path,
   ARG_NULL = 0, ARG_BOOL = 1, ARG_INT = 2, ARG_SIZE = 3, ARG_DOUBLE = 4,
   ARG_STRING = 5, ARG_LIST = 6, ARG_FILE = 7, ARG_MAX = 8,
   PARALLEL_COMMAND = true,
}

function sysbench.cmdline.command_defined(name)
   local cmds = rawget(sysbench.cmdline, "commands")
   return type(cmds) == "table" and cmds[name] ~= nil and cmds[name][1] ~= nil
end

function sysbench.cmdline.command_parallel(name)
   return sysbench.cmdline.command_defined(name) and
      sysbench.cmdline.commands[name][2] == sysbench.cmdline.PARALLEL_COMMAND
end

function sysbench.cmdline.call_command(name)
   if not sysbench.cmdline.command_defined(name) then
      return false
   end
   local rc = sysbench.cmdline.commands[name][1]()
   return rc == nil or rc and true or false
end

function sysbench.cmdline.print_test_options()
   io.write(vp.options_help())
end

-- sysbench.rand ---------------------------------------------------------

sysbench.rand = strict({
   default = vp.rand_default,
   uniform = vp.rand_uniform,
   gaussian = vp.rand_gaussian,
   special = vp.rand_special,
   pareto = vp.rand_pareto,
   zipfian = vp.rand_zipfian,
   unique = vp.rand_unique,
   uniform_uint64 = vp.rand_uint64,
   uniform_double = vp.rand_double,
   string = vp.rand_string,
   varstring = function(min_len, max_len)
      assert(min_len <= max_len, "varstring: min_len > max_len")
      assert(max_len > 0, "varstring: max_len must be positive")
      return vp.rand_varstring(min_len, max_len)
   end,
}, "sysbench.rand")

-- The legacy global names (sysbench 0.5 scripts; oltp_common.lua uses sb_rand).
sb_rand = vp.rand_default
sb_rand_uniform = vp.rand_uniform
sb_rand_gaussian = vp.rand_gaussian
sb_rand_special = vp.rand_special
sb_rand_str = vp.rand_string
-- Unique values drawn until one falls in [a, b] (the whole 32-bit range
-- by default), as sysbench does.
function sb_rand_uniq(a, b)
   a, b = a or 0, b or 4294967295
   local v
   repeat v = vp.rand_unique() until v >= a and v <= b
   return v
end
-- The lower 32 bits of a uniform 64-bit draw, as a Lua number.
function sb_rnd() return tonumber(vp.rand_uint64() % 4294967296) end
-- sysbench 0.5's globals: the script as named and the thread's id.
test = vp.script_path
thread_id = vp.tid

-- sysbench.sql ----------------------------------------------------------

sysbench.sql = strict({}, "sysbench.sql")
local sql_type = {
   NONE = 0, TINYINT = 1, SMALLINT = 2, INT = 3, BIGINT = 4, FLOAT = 5,
   DOUBLE = 6, TIME = 7, DATE = 8, DATETIME = 9, TIMESTAMP = 10, CHAR = 11,
   VARCHAR = 12,
}
rawset(sysbench.sql, "type", sql_type)
rawset(sysbench.sql, "error", { NONE = 0, IGNORABLE = 1, FATAL = 2 })

local result_methods = {}
result_methods.__index = result_methods
result_methods.__tostring = function() return "<sql_result>" end

-- A connection's one result (sysbench's con->rs): the next query on the
-- connection replaces it. `conn` is the Rust side's connection, which keeps
-- the rows; a row becomes a Lua table only when fetched.
function result_methods.fetch_row(self)
   local row = self.conn:row(self.gen, self.pos)
   if row == nil then return nil end
   self.pos = self.pos + 1
   return row
end

-- A connection's state, as sysbench keeps it: ready, holding a result
-- set (after a query that returned rows), or closed.
local READY, RESULT_SET, CLOSED = 0, 1, 2

-- Failures raised as sysbench raises them: an assert in tail position,
-- which names the line that called the API's function.
function result_methods.free(self)
   local con = self.con
   local ok = true
   if con.state == CLOSED then
      log_text("ALERT: attempt to use an already closed connection\n")
      ok = false
   elseif con.state ~= RESULT_SET then
      log_text("ALERT: attempt to free an invalid result set\n")
      ok = false
   else
      con.state = READY
      self.gen = 0
   end
   return assert(ok, "db_free_results() failed")
end

local connection_methods = {}
connection_methods.__index = connection_methods
connection_methods.__tostring = function() return "<sql_connection>" end

-- What an error descriptor names as its connection: sysbench's is a cdata
-- pointer (printed "<sql_connection>" by inspect and tostring alike),
-- so this is one too, a handle whose fields and methods are the
-- connection's.
local handle_con = setmetatable({}, { __mode = "v" })
local next_handle = 0
local con_handle = real_ffi.metatype("struct { int32_t id; }", {
   __index = function(h, k) return handle_con[h.id][k] end,
   __newindex = function(h, k, v) handle_con[h.id][k] = v end,
   __tostring = function() return "<sql_connection>" end,
})
local function handle_of(con)
   if type(con) == "cdata" then return con end
   local h = rawget(con, "handle")
   if h == nil then
      next_handle = next_handle + 1
      h = con_handle(next_handle)
      handle_con[next_handle] = con
      rawset(con, "handle", h)
   end
   return h
end

-- Turns the Rust side's answer into a result, or raises sysbench's errors:
-- a table with errcode = RESTART_EVENT for an ignorable error (the event
-- is restarted), a message for any other.
local function answer(self, query, ok, a, b, c, d)
   if ok then
      local rs = self.rs
      rs.nfields, rs.nrows, rs.gen, rs.pos = a, b, c, 1
      self.state = a > 0 and RESULT_SET or READY
      return rs
   end
   self.state = READY
   local class, errno, state, msg = a, b, c, d
   if class == "fatal" then
      -- What sysbench's drivers log for a failed query or statement (an
      -- ignorable error only at --verbosity=5).
      local name = vp.db_driver
      local prepared = query == "<prepared statement>"
      if name == "pgsql" and prepared then
         log_text("FATAL: PQexecPrepared() failed: 7 " .. msg .. "\n")
      elseif name == "pgsql" then
         log_text("FATAL: PQexec() failed: 7 " .. msg .. "\n")
         log_text("FATAL: failed query was: " .. query .. "\n")
      elseif name == "mysql" then
         log_text(string.format("FATAL: %s returned error %d (%s) for query '%s'\n",
                                prepared and "mysql_stmt_execute()" or "mysql_drv_query()",
                                errno, msg, prepared and self.stmt_sql or query))
      end
   end
   self.error = class == "ignorable" and 1 or 2
   self.sql_errno, self.sql_state, self.sql_errmsg = errno, state, msg
   local errdesc = { connection = handle_of(self), query = query, sql_errno = errno,
                     sql_state = state, sql_errmsg = msg }
   local hook = rawget(sysbench.hooks, "sql_error_ignorable")
   if class == "ignorable" or
      (class == "fatal" and type(hook) == "function" and hook(errdesc))
   then
      self.conn:rollback()
      vp.counter_inc(4)
      errdesc.errcode = sysbench.error.RESTART_EVENT
      error(errdesc, 3)
   end
   -- Level 2, as sysbench's check_error raises it: `answer` is called in
   -- tail position, so this is the line that called the API's function.
   error(string.format("SQL error, errno = %d, state = '%s': %s",
                       errno, state, msg), 2)
end

-- Prepared statements run through LuaJIT's FFI, which compiles the call
-- into the trace: the values go in an array of these (a boolean as 0 or
-- 1, a string as its bytes, which the caller's `values` keeps alive), the
-- answer comes back in a struct. The types are anonymous, so no name of a
-- script's own cdef can clash with them.
local sql_arg = real_ffi.typeof(
   "struct { int32_t kind; double num; const char *text; size_t len; }")
local sql_args = real_ffi.typeof("$[?]", sql_arg)
local sql_answer = real_ffi.typeof("struct { double nfields, nrows, gen; }")
local execute_ffi = real_ffi.cast(real_ffi.typeof(
   "int32_t (*)(const void *, uint64_t, double, int32_t, const $ *, $ *)",
   sql_arg, sql_answer), vp.execute_ffi)
local ARG_NULL, ARG_NUMBER, ARG_TEXT = 0, 1, 2
local FFI_DONE, FFI_FAILED = 0, 1

-- Runs prepared statement `id` of `con` with values[1..n] and answers as
-- `answer` does. `answer` is called in tail position (as this function is
-- from statement_methods.execute), so its errors name the line that
-- called the API's function, as sysbench's do. What the
-- FFI path does not take (another kind of value, a closed connection, a
-- string that is not UTF-8) goes to the connection's `execute` method,
-- which runs it or raises its error.
local function execute_prepared(con, query, id, values, n, sql)
   local args = con.args
   if n > con.nargs then
      args = sql_args(n)
      con.args, con.nargs = args, n
   end
   for i = 1, n do
      local v, a = values[i], args[i - 1]
      local t = type(v)
      if t == "number" then
         a.kind, a.num = ARG_NUMBER, v
      elseif t == "string" then
         a.kind, a.text, a.len = ARG_TEXT, v, #v
      elseif v == nil then
         a.kind = ARG_NULL
      elseif t == "boolean" then
         a.kind, a.num = ARG_NUMBER, v and 1 or 0
      else
         con.stmt_sql = sql
         return answer(con, query, con.conn:execute(id, unpack(values, 1, n)))
      end
   end
   local out = con.out
   local status = execute_ffi(con.slot, con.slot_id, id, n, args, out)
   if status == FFI_DONE then
      local rs = con.rs
      rs.nfields, rs.nrows, rs.gen, rs.pos = out.nfields, out.nrows, out.gen, 1
      con.state = out.nfields > 0 and RESULT_SET or READY
      return rs
   end
   -- Off the FFI path: the statement's text for the driver's FATAL line,
   -- should it fail.
   con.stmt_sql = sql
   if status == FFI_FAILED then
      return answer(con, query, false, con.conn:last_error())
   end
   return answer(con, query, con.conn:execute(id, unpack(values, 1, n)))
end

-- The statement's number on the connection, or nil having logged the
-- driver's FATAL line for a statement the server refused at once.
local function server_prepare(con, query)
   local id, why = con.conn:prepare(query)
   if id == nil then
      log_text("FATAL: " .. why .. "\n")
   end
   return id
end

-- sysbench's error for a call on a closed connection, raised where its
-- check_error raises it (called in tail position, as there).
local function api_error()
   error("SQL API error", 3)
end

function connection_methods.query(self, query)
   if self.state == CLOSED then
      log_text("ALERT: attempt to use an already closed connection\n")
      return api_error()
   end
   return answer(self, query, self.conn:query(query))
end

function connection_methods.query_row(self, query)
   local rs = self:query(query)
   if rs.nrows == 0 or rs.nfields == 0 then return nil end
   return unpack(rs:fetch_row(), 1, rs.nfields)
end

function connection_methods.disconnect(self)
   if self.state == CLOSED then
      log_text("ALERT: attempt to close an already closed connection\n")
      return true
   end
   self.conn:close()
   self.state = CLOSED
   return true
end

function connection_methods.reconnect(self)
   -- sysbench's PostgreSQL driver has no reconnect.
   if vp.db_driver == "pgsql" then
      log_text("ALERT: reconnect is not supported by the current driver\n")
      return true
   end
   if self.state == CLOSED then
      log_text("ALERT: attempt to close an already closed connection\n")
      return true
   end
   self.conn:reconnect()
   self.state = READY
   vp.counter_inc(5)
   return true
end

function connection_methods.check_error(self, rs)
   return rs
end

function connection_methods.bulk_insert_init(self, query)
   self.bulk_prefix = query
   self.bulk_rows = {}
   self.bulk_size = 0
   self.conn:bulk_begin()
   return true
end

local BULK_BYTES = 512 * 1024
local BULK_ROWS = 500

local function bulk_flush(self)
   if #self.bulk_rows > 0 then
      local q = self.bulk_prefix .. " " .. table.concat(self.bulk_rows, ",")
      self.bulk_rows = {}
      self.bulk_size = 0
      answer(self, q, self.conn:query(q))
   end
end

function connection_methods.bulk_insert_next(self, values)
   if self.bulk_prefix == nil then
      log_text("ALERT: attempt to call bulk_insert_next() before bulk_insert_init()\n")
      return assert(false, "db_bulk_insert_next() failed")
   end
   local rows = self.bulk_rows
   rows[#rows + 1] = values
   self.bulk_size = self.bulk_size + #values
   if self.bulk_size >= BULK_BYTES or #rows >= BULK_ROWS then
      bulk_flush(self)
   end
   return true
end

function connection_methods.bulk_insert_done(self)
   if self.bulk_prefix ~= nil then
      bulk_flush(self)
      self.bulk_prefix = nil
      self.conn:bulk_end()
   end
   return true
end

local param_methods = {}
param_methods.__index = param_methods
param_methods.__tostring = function() return "<sql_param>" end

function param_methods.set(self, value)
   if value ~= nil and self.text and self.max_len < #value then
      value = string.sub(value, 1, self.max_len)
   end
   self.value = value
end

function param_methods.set_rand_str(self, fmt)
   if not self.text then
      error("Unsupported argument type: " .. self.type, 2)
   end
   self.value = vp.rand_string(fmt)
end

local statement_methods = {}
statement_methods.__index = statement_methods
statement_methods.__tostring = function() return "<sql_statement>" end

-- A parameter as sysbench makes it: an integer kind becomes BIGINT, a
-- floating one DOUBLE, a string one VARCHAR; until set, it is 0 or the
-- empty string (set(nil) makes it NULL). Other kinds are refused.
function statement_methods.bind_create(self, btype, max_len)
   local p = setmetatable({ max_len = 8 }, param_methods)
   if btype == sql_type.TINYINT or btype == sql_type.SMALLINT
      or btype == sql_type.INT or btype == sql_type.BIGINT then
      p.type, p.value = sql_type.BIGINT, 0
   elseif btype == sql_type.FLOAT or btype == sql_type.DOUBLE then
      p.type, p.value = sql_type.DOUBLE, 0
   elseif btype == sql_type.CHAR or btype == sql_type.VARCHAR then
      p.type, p.value, p.text = sql_type.VARCHAR, "", true
      p.max_len = max_len or 0
   else
      error("Unsupported argument type: " .. tostring(btype), 2)
   end
   return p
end

function statement_methods.bind_param(self, ...)
   if select("#", ...) < 1 then return nil end
   self.params = { ... }
   self.nparams = select("#", ...)
   return 0
end

function statement_methods.execute(self)
   local params, values = self.params, self.values
   local n = self.nparams
   for i = 1, n do
      values[i] = params[i].value
   end
   return execute_prepared(self.connection, "<prepared statement>", self.id,
                           values, n, self.query)
end

function statement_methods.close(self)
   return 0
end

function connection_methods.prepare(self, query)
   local id = server_prepare(self, query)
   if id == nil then
      error("SQL API error", 2)
   end
   return setmetatable({ connection = self, query = query, params = {},
                         nparams = 0, values = {}, id = id }, statement_methods)
end

local driver_methods = {}
driver_methods.__index = driver_methods
driver_methods.__tostring = function() return "<sql_driver>" end

function driver_methods.connect(self)
   local conn, fatal = vp.connect()
   if conn == nil then
      -- The driver's FATAL lines, then sysbench's words.
      log_text(fatal)
      error("connection creation failed", 2)
   end
   local rs = setmetatable({ conn = conn, nfields = 0, nrows = 0, gen = 0,
                             pos = 1 }, result_methods)
   -- slot, slot_id, args, nargs, out: execute_prepared's.
   local slot, slot_id = conn:ffi_handle()
   local con = setmetatable({ conn = conn, error = 0, rs = rs, state = READY,
                              slot = real_ffi.cast("const void *", slot),
                              slot_id = slot_id, args = sql_args(8), nargs = 8,
                              out = sql_answer() }, connection_methods)
   rs.con = con
   return con
end

function driver_methods.name(self)
   return self.sname
end

-- sysbench's words for a --db-driver it has no driver for, when a script
-- asks for the driver: a FATAL line, then `failure` raised `level` calls
-- up (the script's line).
local function check_driver(failure, level)
   local bad = vp.bad_driver()
   if bad ~= nil then
      log_text("FATAL: invalid database driver name: '" .. bad .. "'\n")
      error(failure, level)
   end
end

local known_drivers = { mysql = true, pgsql = true, sqlite = true }

rawset(sysbench.sql, "driver", function(name)
   check_driver("failed to initialize the DB driver", 3)
   local drv = vp.driver_name()
   if name ~= nil and not known_drivers[name] then
      log_text("FATAL: invalid database driver name: '" .. tostring(name) .. "'\n")
      error("failed to initialize the DB driver", 2)
   end
   if name ~= nil and name ~= vp.db_driver then
      error("failed to initialize the DB driver: virtperf runs scripts on " ..
            "--db-driver=" .. vp.db_driver .. " only", 2)
   end
   return setmetatable({ sname = drv }, driver_methods)
end)

-- sysbench 0.5's database API (sysbench.db and its db_* globals), as
-- sysbench 1.0 keeps it for old scripts: one connection per thread, made
-- by db_connect or by the first query (or statement) that needs it, and
-- prepared statements whose parameters are a table the script keeps
-- changing between executions.
local legacy = {}
local function legacy_con()
   if legacy.con == nil then
      check_driver("DB initialization failed", 4)
      legacy.con = sysbench.sql.driver():connect()
   end
   return legacy.con
end
rawset(sysbench, "db", {
   DB_ERROR_NONE = 0,
   DB_ERROR_RESTART_TRANSACTION = 1,
   DB_ERROR_FAILED = 2,
   connect = function() legacy_con() end,
   disconnect = function()
      if legacy.con ~= nil then
         legacy.con:disconnect()
         legacy.con = nil
      end
   end,
   -- Nothing back, as in sysbench.
   query = function(query) legacy_con():query(query) end,
   bulk_insert_init = function(query) return legacy_con():bulk_insert_init(query) end,
   bulk_insert_next = function(values) return legacy_con():bulk_insert_next(values) end,
   bulk_insert_done = function() return legacy_con():bulk_insert_done() end,
})

-- 0.5's statements and results are objects of these two kinds; the
-- functions check what they are given as sysbench checks its userdata.
local legacy_stmt = { __name = "sysbench.stmt",
                      __tostring = function() return "<sysbench.stmt>" end }
local legacy_rs = { __name = "sysbench.rs",
                    __tostring = function() return "<sysbench.rs>" end }

local function legacy_check(fname, v, kind)
   if getmetatable(v) ~= kind then
      error(string.format("bad argument #1 to '%s' (%s expected, got %s)",
                          fname, kind.__name, type(v)), 3)
   end
end

-- Calls that need the connection a query or db_prepare made.
local function legacy_connected()
   if legacy.con == nil then
      error("Uninitialized database connection", 3)
   end
   return legacy.con
end

-- The table's entries in the order they are visited, each value's kind
-- (the kind a parameter keeps for the statement's life, as in sysbench).
local function legacy_binds(t)
   if type(t) ~= "table" then error("table was expected", 3) end
   local binds = {}
   for k, v in pairs(t) do
      local kind = type(v)
      if kind ~= "number" and kind ~= "string" then
         -- Without a place, as sysbench raises it.
         error("Unsupported variable type: " .. kind, 0)
      end
      binds[#binds + 1] = { key = k, kind = kind }
   end
   if #binds == 0 then error("table is empty", 3) end
   return binds
end

rawset(sysbench.db, "prepare", function(query)
   local con = legacy_con()
   if type(query) ~= "string" and type(query) ~= "number" then
      error(string.format("bad argument #1 to 'db_prepare' (string expected, got %s)",
                          type(query)), 2)
   end
   local id = server_prepare(con, tostring(query))
   if id == nil then
      -- sysbench's luaL_error from C: no place.
      error("db_prepare() failed", 0)
   end
   return setmetatable({ con = con, query = tostring(query), id = id, binds = {},
                         values = {} }, legacy_stmt)
end)

rawset(sysbench.db, "bind_param", function(stmt, params)
   legacy_connected()
   legacy_check("db_bind_param", stmt, legacy_stmt)
   stmt.binds = legacy_binds(params)
   stmt.params = params
end)

-- Accepted as sysbench 1.0 accepts it: it checks the table and keeps it,
-- and fills in nothing (rows are not fetched through this API).
rawset(sysbench.db, "bind_result", function(stmt, results)
   legacy_connected()
   legacy_check("db_bind_result", stmt, legacy_stmt)
   stmt.results = legacy_binds(results)
end)

-- Runs the statement with the bound table's current values: a number
-- parameter as a C int (truncated), a string one as text, a missing one as
-- NULL. An ignorable error restarts the event; a result object comes back.
rawset(sysbench.db, "execute", function(stmt)
   local con = legacy_connected()
   legacy_check("db_execute", stmt, legacy_stmt)
   local values, n = stmt.values, #stmt.binds
   for i, b in ipairs(stmt.binds) do
      local v = stmt.params[b.key]
      if v == nil then
         values[i] = nil
      elseif b.kind == "number" then
         local x = tonumber(v)
         if x == nil then
            error(string.format("bad argument #-1 to 'db_execute' (number expected, got %s)",
                                type(v)), 2)
         end
         values[i] = x < 0 and math.ceil(x) or math.floor(x)
      else
         if type(v) ~= "string" and type(v) ~= "number" then
            error(string.format("bad argument #-1 to 'db_execute' (string expected, got %s)",
                                type(v)), 2)
         end
         values[i] = tostring(v)
      end
   end
   execute_prepared(con, stmt.query, stmt.id, values, n, stmt.query)
   return setmetatable({ stmt = stmt }, legacy_rs)
end)

rawset(sysbench.db, "close", function(stmt)
   legacy_connected()
   legacy_check("db_close", stmt, legacy_stmt)
end)

-- A no-op, as in sysbench 1.0: queries store their results themselves.
rawset(sysbench.db, "store_results", function(rs)
   legacy_connected()
   legacy_check("db_store_results", rs, legacy_rs)
end)

rawset(sysbench.db, "free_results", function(rs)
   legacy_connected()
   legacy_check("db_free_results", rs, legacy_rs)
end)
strict(sysbench.db, "sysbench.db")
db_connect = sysbench.db.connect
db_disconnect = sysbench.db.disconnect
db_query = sysbench.db.query
db_bulk_insert_init = sysbench.db.bulk_insert_init
db_bulk_insert_next = sysbench.db.bulk_insert_next
db_bulk_insert_done = sysbench.db.bulk_insert_done
DB_ERROR_NONE = sysbench.db.DB_ERROR_NONE
DB_ERROR_RESTART_TRANSACTION = sysbench.db.DB_ERROR_RESTART_TRANSACTION
DB_ERROR_FAILED = sysbench.db.DB_ERROR_FAILED
db_prepare = sysbench.db.prepare
db_bind_param = sysbench.db.bind_param
db_bind_result = sysbench.db.bind_result
db_execute = sysbench.db.execute
db_close = sysbench.db.close
db_store_results = sysbench.db.store_results
db_free_results = sysbench.db.free_results
-- What sysbench 1.0's compatibility layer sets for 0.5's OLTP scripts
-- (a --mysql-table-engine given to such a script replaces the engine when
-- the options become globals).
mysql_table_engine = mysql_table_engine or "innodb"
myisam_max_rows = 1000000

-- Reports ---------------------------------------------------------------

function sysbench.report_csv(stat)
   local s = stat.time_interval
   print(string.format("%.0f,%u,%4.2f,%4.2f,%4.2f,%4.2f,%4.2f,%4.2f,%4.2f,%4.2f",
      stat.time_total, stat.threads_running, stat.events / s,
      (stat.reads + stat.writes + stat.other) / s, stat.reads / s,
      stat.writes / s, stat.other / s, stat.latency_pct * 1000,
      stat.errors / s, stat.reconnects / s))
end

local json_started = false
function sysbench.report_json(stat)
   local s = stat.time_interval
   io.write(json_started and ",\n" or "[\n")
   json_started = true
   io.write(string.format(
      '  {\n    "time": %4.0f,\n    "threads": %u,\n    "tps": %4.2f,\n' ..
      '    "qps": {\n      "total": %4.2f,\n      "reads": %4.2f,\n' ..
      '      "writes": %4.2f,\n      "other": %4.2f\n    },\n' ..
      '    "latency": %4.2f,\n    "errors": %4.2f,\n    "reconnects": %4.2f\n  }',
      stat.time_total, stat.threads_running, stat.events / s,
      (stat.reads + stat.writes + stat.other) / s, stat.reads / s,
      stat.writes / s, stat.other / s, stat.latency_pct * 1000,
      stat.errors / s, stat.reconnects / s))
end

-- Closes report_json's array: sysbench closes one when the Lua state
-- that reported closes, so intermediate and cumulative reports are each
-- an array of their own.
function vp.close_json()
   if json_started then io.write("\n]\n") end
   json_started = false
end

function sysbench.report_default(stat)
   local s = stat.time_interval
   print(string.format("[ %.0fs ] thds: %u tps: %4.2f qps: %4.2f " ..
      "(r/w/o: %4.2f/%4.2f/%4.2f) lat (ms,%u%%): %4.2f err/s %4.2f " ..
      "reconn/s: %4.2f",
      stat.time_total, stat.threads_running, stat.events / s,
      (stat.reads + stat.writes + stat.other) / s, stat.reads / s,
      stat.writes / s, stat.other / s, sysbench.opt.percentile,
      stat.latency_pct * 1000, stat.errors / s, stat.reconnects / s))
end

-- The event loop's body, called by the engine once per event: runs
-- event(), restarting it after an ignorable SQL error (with the
-- before_restart_event hook first). Returns true when event() asked to
-- stop (returned a value other than nil or false).
local restart = sysbench.error.RESTART_EVENT
function vp.run_event(tid)
   while true do
      local ok, ret = pcall(event, tid)
      if ok then
         return ret and true or false
      end
      if type(ret) == "table" and ret.errcode == restart then
         local hook = rawget(sysbench.hooks, "before_restart_event")
         if hook then hook(ret) end
      else
         error(ret, 0)
      end
   end
end

strict(sysbench, "sysbench")
