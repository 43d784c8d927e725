-- Prepared statements' values and errors on SQLite, through the FFI path
-- the prelude takes (execute_prepared) and, for comparison, through the
-- connection's `execute` method it falls back to: every kind of value
-- comes back as that method gives it, errors keep their class, number and
-- message, and a closed connection is an error. Asserts as it goes and
-- prints the lines tests/lua.rs checks.

-- The connection's Rust methods, counted: the FFI path calls none of them
-- while it can take a statement, so a count says which path ran. (`conn`
-- is the prelude's field, not sysbench's API.)
local function counted(con)
   local real, calls = con.conn, {}
   con.conn = setmetatable({}, { __index = function(_, name)
      return function(_, ...)
         calls[name] = (calls[name] or 0) + 1
         return real[name](real, ...)
      end
   end })
   return real, calls
end

local function hex(s)
   return (s:gsub(".", function(c) return string.format("%02x", c:byte()) end))
end

local function same(a, b, what)
   if a ~= b then
      error(string.format("%s: %q ~= %q", what, tostring(a), tostring(b)), 2)
   end
end

function event()
   local con = sysbench.sql.driver():connect()
   local real, calls = counted(con)
   local stmt = con:prepare("SELECT ?, typeof(?), hex(?)")
   local int = sysbench.sql.type.INT
   local p1, p2, p3 = stmt:bind_create(int), stmt:bind_create(int),
      stmt:bind_create(int)
   stmt:bind_param(p1, p2, p3)

   local nul = "a\0b"
   local values = {
      42, -7, 2^53, 1e16, -(0.0), 0.5, 1e-7, 2^63, 1e300, 1/0, -1/0, 0/0,
      true, false, "", nul, "h\195\169llo \226\156\147", string.rep("xy", 600),
   }
   for i = 1, #values do
      local v = values[i]
      p1:set(v) p2:set(v) p3:set(v)
      local rs = stmt:execute()
      same(rs.nfields, 3, "nfields")
      same(rs.nrows, 1, "nrows")
      local row = rs:fetch_row()
      same(rs:fetch_row(), nil, "one row")
      -- The same statement and value through the method.
      local ok, nfields, nrows, gen = real:execute(stmt.id, v, v, v)
      assert(ok and nfields == 3 and nrows == 1, "execute answered")
      local want = real:row(gen, 1)
      for j = 1, 3 do
         same(row[j], want[j], "value " .. i .. " column " .. j)
      end
      same(row[3], hex(row[1]):upper(), "the value's bytes")
      print(string.format("value %d %s %d %s", i, row[2], #row[1], hex(row[1]):sub(1, 24)))
   end
   print("ffi executes fell back " .. (calls.execute or 0))

   -- sysbench 0.5's prepared statements: a nil as NULL, a number cut to
   -- an integer, on the same path.
   con:query("CREATE TABLE legacy_v (a, b)")
   local ins = db_prepare("INSERT INTO legacy_v VALUES (?, ?)")
   local row = { 2.9, "two" }
   db_bind_param(ins, row)
   db_execute(ins)
   row[1], row[2] = -3.5, nil
   db_execute(ins)
   db_disconnect()
   local q = con:query("SELECT a, typeof(a), b, typeof(b) FROM legacy_v ORDER BY rowid")
   for r in function() return q:fetch_row() end do
      print("legacy " .. table.concat({ r[1], r[2], tostring(r[3]), r[4] }, " "))
   end

   -- A failing statement: sysbench's fatal error with the driver's number
   -- and message, as the method gives them.
   con:query("CREATE TABLE unique_v (id INTEGER PRIMARY KEY)")
   local put = con:prepare("INSERT INTO unique_v VALUES (?)")
   local key = put:bind_create(int)
   put:bind_param(key)
   key:set(1)
   put:execute()
   local ok, err = pcall(function() put:execute() end) local line = debug.getinfo(1, "l").currentline
   assert(not ok and type(err) == "string", "a duplicate key is an error")
   -- Raised at the level sysbench's are: the line that called execute.
   same(err:match("prepared%.lua:(%d+): SQL error"), tostring(line), "the error's line")
   local _, class, errno, state, msg = real:execute(put.id, 1)
   same(class, "fatal", "class")
   assert(errno > 0, "an error number")
   same(err:match("SQL error, errno = %d+, state = '.-': .*$"),
        string.format("SQL error, errno = %d, state = '%s': %s", errno, state, msg),
        "the fatal error")
   print("fatal " .. err:match("SQL error.*$"))
   -- The hook makes it ignorable: the error is sysbench's table.
   sysbench.hooks.sql_error_ignorable = function() return true end
   ok, err = pcall(put.execute, put)
   sysbench.hooks.sql_error_ignorable = nil
   assert(not ok and type(err) == "table", "an ignorable error")
   same(err.errcode, sysbench.error.RESTART_EVENT, "errcode")
   same(err.sql_errno, errno, "sql_errno")
   same(err.sql_errmsg, msg, "sql_errmsg")
   -- A handle on the connection, as sysbench's cdata pointer.
   same(tostring(err.connection), "<sql_connection>", "connection")
   same(err.connection.sql_errno, con.sql_errno, "the connection's fields")
   same(con.sql_errno, errno, "con.sql_errno")
   print("ignorable errno " .. err.sql_errno .. " last_error " .. calls.last_error)

   -- What the FFI path leaves to the method, which says what is wrong
   -- in its words.
   local fallbacks = calls.execute or 0
   p1:set("\255") p2:set(1) p3:set(1)
   ok, err = pcall(stmt.execute, stmt)
   local _, direct = pcall(real.execute, real, stmt.id, "\255", 1, 1)
   assert(not ok, "a string that is not UTF-8 is refused")
   same(tostring(err):match("^[^\n]*"), tostring(direct):match("^[^\n]*"),
        "the UTF-8 error")
   p1:set({})
   ok, err = pcall(stmt.execute, stmt)
   assert(not ok and tostring(err):find("a statement parameter cannot be a table", 1, true),
          tostring(err))
   p1:set(1)
   con:disconnect()
   ok, err = pcall(stmt.execute, stmt)
   assert(not ok and tostring(err):find("the connection was closed (disconnect)", 1, true),
          tostring(err))
   ok, err = pcall(put.execute, put)
   assert(not ok and tostring(err):find("the connection was closed", 1, true), tostring(err))
   print("fell back " .. calls.execute - fallbacks)
   -- A connection made after this one was collected works.
   con, stmt, put, real = nil, nil, nil, nil
   collectgarbage()
   collectgarbage()
   local again = sysbench.sql.driver():connect()
   local one = again:prepare("SELECT ? + 1")
   local x = one:bind_create(int)
   one:bind_param(x)
   x:set(41)
   print("again " .. one:execute():fetch_row()[1])
   again:query("DROP TABLE legacy_v")
   again:query("DROP TABLE unique_v")
   again:disconnect()
end
