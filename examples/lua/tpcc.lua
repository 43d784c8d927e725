-- tpcc.lua: a TPC-C-like OLTP workload in sysbench 1.0 Lua, for MySQL/MariaDB
-- and PostgreSQL. One self-contained file (it requires nothing), so it runs
-- unmodified under sysbench 1.0 and under virtperf, on the host or shipped into
-- a container or VM.
--
-- What it does
--   The nine TPC-C tables (warehouse, district, customer, history, new_order,
--   orders, order_line, item, stock) and the five transactions in the standard
--   mix: new-order 45%, payment 43%, order-status, delivery and stock-level 4%
--   each. Customer and item ids are drawn with NURand; 60% of payments and
--   order-status look the customer up by last name (the middle one of those
--   sharing it, ordered by first name); 1% of new-orders name an unused item
--   and roll back; 15% of payments pay for a customer of another warehouse and
--   1% of order lines come from another warehouse (with --scale > 1).
--
-- Commands
--   prepare   creates and loads the tables; with --threads=N the N threads
--             load the warehouses round robin and the item table in slices
--             (thread 0 creates the tables, the others wait for them)
--   run       the transaction mix, one transaction per event
--   check     TPC-C's consistency conditions 1-4, per warehouse and district;
--             prints what it checked and fails (non-zero exit) when one does
--             not hold
--   cleanup   drops the nine tables
--
-- Options
--   --scale=N                   warehouses (default 1)
--   --items=N                   rows of the item table and of stock per
--                               warehouse (default 100000, as TPC-C)
--   --customers-per-district=N  customers per district, and orders loaded per
--                               district, 30% of them not yet delivered
--                               (default 3000, as TPC-C)
--   --mix-report=on|off         each thread prints its transactions by type
--                               when the run ends (default on)
--   plus sysbench's own: --threads, --time, --events, --report-interval,
--   --db-driver=mysql|pgsql and the driver's connection options.
--
-- Running it
--   virtperf ./tpcc.lua --db-driver=mysql --mysql-host=127.0.0.1 --scale=2 --threads=2 prepare
--   virtperf ./tpcc.lua --db-driver=mysql --mysql-host=127.0.0.1 --scale=2 --threads=2 --time=60 run
--   virtperf ./tpcc.lua --db-driver=mysql --mysql-host=127.0.0.1 --scale=2 check
--   virtperf ./tpcc.lua --db-driver=mysql --mysql-host=127.0.0.1 cleanup
--   The same lines with `sysbench` in place of `virtperf` (and with
--   --db-driver=pgsql --pgsql-host=... for PostgreSQL). prepare, run and check
--   must be given the same --scale, --items and --customers-per-district.
--
-- Where it departs from the TPC-C specification
--   - No keying or think times, no terminals bound to warehouses: each event
--     is one transaction at a uniformly drawn home warehouse and district,
--     back to back, so the figure is transactions per second of the whole
--     mix, not tpmC, and it is not comparable with audited results.
--   - Delivery runs in line, as one transaction over the ten districts,
--     not queued and deferred.
--   - NURand's C constants are fixed (the run's C_LAST differs from the
--     load's by a legal delta), not drawn per run.
--   - Smaller data with --items and --customers-per-district; with fewer
--     than 1000 customers a district, last names are drawn among the numbers
--     below the customer count, so that every name drawn exists.
--   - New-order takes its items in ascending order (fewer deadlocks); no
--     foreign keys; none of the ACID tests (`check` covers the consistency
--     conditions 1-4 only). Transactions run at the server's default
--     isolation (InnoDB's REPEATABLE READ, PostgreSQL's READ COMMITTED) and
--     read with SELECT ... FOR UPDATE what they write back: the district's
--     next order id, the stock's quantity, the customer's data and the
--     oldest new order a delivery takes.
--   - Deadlocks, lock wait timeouts and serialization failures roll back the
--     transaction and retry it, as sysbench restarts an event after an
--     error its driver classes as ignorable.

local ffi = require("ffi")
local bit = require("bit")
pcall(ffi.cdef, "int usleep(unsigned int useconds);")

sysbench.cmdline.options = {
   scale = {"Number of warehouses", 1},
   items = {"Rows in the item table, and in stock per warehouse", 100000},
   customers_per_district =
      {"Customers per district, and orders loaded per district", 3000},
   mix_report = {"Print each thread's transactions by type at the end", true},
}

local TABLES = { "history", "new_order", "order_line", "orders", "customer",
                 "district", "stock", "item", "warehouse" }

local DISTRICTS = 10

-- NURand's constants: C for the customers' last names at load and at run
-- time (their difference, 66, is one the specification allows), for
-- customer ids and for item ids.
local C_LAST_LOAD, C_LAST_RUN, C_ID, C_ITEM = 157, 223, 259, 7911

local SYLLABLES = { "BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI",
                    "CALLY", "ATION", "EING" }

local function opt_int(name)
   local v = tonumber(sysbench.opt[name])
   if v == nil or v < 1 then
      error(string.format("--%s must be a positive number", (name:gsub("_", "-"))))
   end
   return math.floor(v)
end

local function sizes()
   local cpd = opt_int("customers_per_district")
   return {
      scale = opt_int("scale"),
      items = opt_int("items"),
      cpd = cpd,
      -- The last 30% of each district's orders are not delivered yet
      -- (TPC-C: 900 of 3000).
      delivered = cpd - math.floor(cpd * 3 / 10),
      -- Last names are drawn from the syllable numbers that exist.
      names = math.min(999, cpd - 1),
   }
end

local function uniform(a, b)
   return sysbench.rand.uniform(a, b)
end

local function nurand(a, c, x, y)
   return (bit.bor(uniform(0, a), uniform(x, y)) + c) % (y - x + 1) + x
end

local function last_name(n)
   return SYLLABLES[math.floor(n / 100) + 1] ..
      SYLLABLES[math.floor(n / 10) % 10 + 1] .. SYLLABLES[n % 10 + 1]
end

-- Random letters, between min and max of them.
local function astring(min, max)
   return sysbench.rand.string(string.rep("@", uniform(min, max)))
end

local function digits(n)
   return sysbench.rand.string(string.rep("#", n))
end

local function zip()
   return digits(4) .. "11111"
end

-- i_data and s_data: 10% of them hold "ORIGINAL" somewhere.
local function data_with_original()
   local s = astring(26, 50)
   if uniform(1, 10) == 1 then
      local at = uniform(1, #s - 8)
      s = s:sub(1, at - 1) .. "ORIGINAL" .. s:sub(at + 8)
   end
   return s
end

local function money(x)
   return string.format("%.2f", x)
end

-- Schema ------------------------------------------------------------------

local function create_tables(drv, con)
   local ts = drv:name() == "mysql" and "DATETIME" or "TIMESTAMP"
   local engine = drv:name() == "mysql" and " ENGINE=InnoDB" or ""
   local addr = function(p)
      return string.format("%s_street_1 VARCHAR(20), %s_street_2 VARCHAR(20), " ..
                           "%s_city VARCHAR(20), %s_state CHAR(2), %s_zip CHAR(9), ",
                           p, p, p, p, p)
   end
   local ddl = {
      "CREATE TABLE warehouse (w_id INT NOT NULL, w_name VARCHAR(10), " .. addr("w") ..
         "w_tax DECIMAL(4,4), w_ytd DECIMAL(12,2), PRIMARY KEY (w_id))",
      "CREATE TABLE district (d_id SMALLINT NOT NULL, d_w_id INT NOT NULL, " ..
         "d_name VARCHAR(10), " .. addr("d") .. "d_tax DECIMAL(4,4), " ..
         "d_ytd DECIMAL(12,2), d_next_o_id INT, PRIMARY KEY (d_w_id, d_id))",
      "CREATE TABLE customer (c_id INT NOT NULL, c_d_id SMALLINT NOT NULL, " ..
         "c_w_id INT NOT NULL, c_first VARCHAR(16), c_middle CHAR(2), " ..
         "c_last VARCHAR(16), " .. addr("c") .. "c_phone CHAR(16), c_since " .. ts ..
         ", c_credit CHAR(2), c_credit_lim DECIMAL(12,2), c_discount DECIMAL(4,4), " ..
         "c_balance DECIMAL(12,2), c_ytd_payment DECIMAL(12,2), c_payment_cnt INT, " ..
         "c_delivery_cnt INT, c_data VARCHAR(500), PRIMARY KEY (c_w_id, c_d_id, c_id))",
      "CREATE INDEX customer_name ON customer (c_w_id, c_d_id, c_last, c_first)",
      "CREATE TABLE history (h_c_id INT, h_c_d_id SMALLINT, h_c_w_id INT, " ..
         "h_d_id SMALLINT, h_w_id INT, h_date " .. ts .. ", h_amount DECIMAL(6,2), " ..
         "h_data VARCHAR(24))",
      "CREATE TABLE orders (o_id INT NOT NULL, o_d_id SMALLINT NOT NULL, " ..
         "o_w_id INT NOT NULL, o_c_id INT, o_entry_d " .. ts .. ", " ..
         "o_carrier_id SMALLINT, o_ol_cnt SMALLINT, o_all_local SMALLINT, " ..
         "PRIMARY KEY (o_w_id, o_d_id, o_id))",
      "CREATE INDEX orders_customer ON orders (o_w_id, o_d_id, o_c_id, o_id)",
      "CREATE TABLE new_order (no_o_id INT NOT NULL, no_d_id SMALLINT NOT NULL, " ..
         "no_w_id INT NOT NULL, PRIMARY KEY (no_w_id, no_d_id, no_o_id))",
      "CREATE TABLE order_line (ol_o_id INT NOT NULL, ol_d_id SMALLINT NOT NULL, " ..
         "ol_w_id INT NOT NULL, ol_number SMALLINT NOT NULL, ol_i_id INT, " ..
         "ol_supply_w_id INT, ol_delivery_d " .. ts .. ", ol_quantity SMALLINT, " ..
         "ol_amount DECIMAL(6,2), ol_dist_info CHAR(24), " ..
         "PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number))",
      "CREATE TABLE item (i_id INT NOT NULL, i_im_id INT, i_name VARCHAR(24), " ..
         "i_price DECIMAL(5,2), i_data VARCHAR(50), PRIMARY KEY (i_id))",
      -- Created last: the other threads of a parallel prepare wait for it.
      "CREATE TABLE stock (s_i_id INT NOT NULL, s_w_id INT NOT NULL, " ..
         "s_quantity SMALLINT, s_dist_01 CHAR(24), s_dist_02 CHAR(24), " ..
         "s_dist_03 CHAR(24), s_dist_04 CHAR(24), s_dist_05 CHAR(24), " ..
         "s_dist_06 CHAR(24), s_dist_07 CHAR(24), s_dist_08 CHAR(24), " ..
         "s_dist_09 CHAR(24), s_dist_10 CHAR(24), s_ytd DECIMAL(8,0), " ..
         "s_order_cnt SMALLINT, s_remote_cnt SMALLINT, s_data VARCHAR(50), " ..
         "PRIMARY KEY (s_w_id, s_i_id))",
   }
   for _, sql in ipairs(ddl) do
      if sql:find("^CREATE TABLE") then
         sql = sql .. engine
      end
      con:query(sql)
   end
end

-- The TPC-C tables among the connection's schema's tables.
local function existing_tables(drv, con)
   local schema = drv:name() == "mysql" and "DATABASE()" or "current_schema()"
   local names = {}
   for i, t in ipairs(TABLES) do
      names[i] = "'" .. t .. "'"
   end
   local rs = con:query("SELECT table_name FROM information_schema.tables " ..
                           "WHERE table_schema = " .. schema ..
                           " AND table_name IN (" .. table.concat(names, ",") .. ")")
   local found = {}
   for i = 1, tonumber(rs.nrows) do
      found[i] = rs:fetch_row()[1]
   end
   table.sort(found)
   return found
end

-- Raises an error naming the TPC-C tables that do not exist.
local function require_tables(drv, con)
   local have, missing = {}, {}
   for _, t in ipairs(existing_tables(drv, con)) do
      have[t] = true
   end
   for _, t in ipairs(TABLES) do
      if not have[t] then
         missing[#missing + 1] = t
      end
   end
   if #missing > 0 then
      error("TPC-C table(s) " .. table.concat(missing, ", ") ..
            " missing: run prepare first", 2)
   end
end

-- Loading -----------------------------------------------------------------

local function load_items(con, first, last)
   if first > last then
      return
   end
   con:bulk_insert_init("INSERT INTO item (i_id, i_im_id, i_name, i_price, i_data) VALUES")
   for i = first, last do
      con:bulk_insert_next(string.format("(%d,%d,'%s',%s,'%s')", i,
                                         uniform(1, 10000), astring(14, 24),
                                         money(uniform(100, 10000) / 100),
                                         data_with_original()))
   end
   con:bulk_insert_done()
end

local function load_warehouse(con, sz, w)
   con:query(string.format(
                "INSERT INTO warehouse VALUES (%d,'%s','%s','%s','%s','%s','%s',%s,300000.00)",
                w, astring(6, 10), astring(10, 20), astring(10, 20), astring(10, 20),
                sysbench.rand.string("@@"), zip(), string.format("%.4f", uniform(0, 2000) / 10000)))

   con:bulk_insert_init("INSERT INTO stock VALUES")
   for i = 1, sz.items do
      local dist = {}
      for d = 1, DISTRICTS do
         dist[d] = "'" .. astring(24, 24) .. "'"
      end
      con:bulk_insert_next(string.format("(%d,%d,%d,%s,0,0,0,'%s')", i, w,
                                         uniform(10, 100), table.concat(dist, ","),
                                         data_with_original()))
   end
   con:bulk_insert_done()

   for d = 1, DISTRICTS do
      con:query(string.format(
                   "INSERT INTO district VALUES (%d,%d,'%s','%s','%s','%s','%s','%s',%s,30000.00,%d)",
                   d, w, astring(6, 10), astring(10, 20), astring(10, 20), astring(10, 20),
                   sysbench.rand.string("@@"), zip(),
                   string.format("%.4f", uniform(0, 2000) / 10000), sz.cpd + 1))

      con:bulk_insert_init("INSERT INTO customer VALUES")
      for c = 1, sz.cpd do
         local last = c <= sz.names + 1 and last_name(c - 1)
            or last_name(nurand(255, C_LAST_LOAD, 0, sz.names))
         con:bulk_insert_next(string.format(
            "(%d,%d,%d,'%s','OE','%s','%s','%s','%s','%s','%s','%s',NOW(),'%s'," ..
               "50000.00,%s,-10.00,10.00,1,0,'%s')",
            c, d, w, astring(8, 16), last, astring(10, 20), astring(10, 20),
            astring(10, 20), sysbench.rand.string("@@"), zip(), digits(16),
            uniform(1, 10) == 1 and "BC" or "GC",
            string.format("%.4f", uniform(0, 5000) / 10000), astring(300, 500)))
      end
      con:bulk_insert_done()

      con:bulk_insert_init("INSERT INTO history VALUES")
      for c = 1, sz.cpd do
         con:bulk_insert_next(string.format("(%d,%d,%d,%d,%d,NOW(),10.00,'%s')",
                                            c, d, w, d, w, astring(12, 24)))
      end
      con:bulk_insert_done()

      -- Each customer has placed one of the district's orders.
      local perm = {}
      for c = 1, sz.cpd do
         perm[c] = c
      end
      for i = sz.cpd, 2, -1 do
         local j = uniform(1, i)
         perm[i], perm[j] = perm[j], perm[i]
      end
      local lines = {}
      con:bulk_insert_init("INSERT INTO orders VALUES")
      for o = 1, sz.cpd do
         lines[o] = uniform(5, 15)
         con:bulk_insert_next(string.format("(%d,%d,%d,%d,NOW(),%s,%d,1)", o, d, w,
                                            perm[o], o <= sz.delivered
                                               and tostring(uniform(1, 10)) or "NULL",
                                            lines[o]))
      end
      con:bulk_insert_done()

      con:bulk_insert_init("INSERT INTO order_line VALUES")
      for o = 1, sz.cpd do
         local delivered = o <= sz.delivered
         for n = 1, lines[o] do
            con:bulk_insert_next(string.format(
               "(%d,%d,%d,%d,%d,%d,%s,5,%s,'%s')", o, d, w, n,
               uniform(1, sz.items), w, delivered and "NOW()" or "NULL",
               delivered and "0.00" or money(uniform(1, 999999) / 100),
               astring(24, 24)))
         end
      end
      con:bulk_insert_done()

      if sz.delivered < sz.cpd then
         con:bulk_insert_init("INSERT INTO new_order VALUES")
         for o = sz.delivered + 1, sz.cpd do
            con:bulk_insert_next(string.format("(%d,%d,%d)", o, d, w))
         end
         con:bulk_insert_done()
      end
   end
end

local function wait_for_tables(drv, con)
   for _ = 1, 600 do
      if #existing_tables(drv, con) == #TABLES then
         return
      end
      ffi.C.usleep(100000)
   end
   error("the TPC-C tables did not appear within 60 s: thread 0 of prepare " ..
         "creates them; see its error")
end

local function cmd_prepare()
   local sz = sizes()
   local threads = sysbench.opt.threads
   local tid = sysbench.tid % threads
   local drv = sysbench.sql.driver()
   local con = drv:connect()
   if tid == 0 then
      local found = existing_tables(drv, con)
      if #found > 0 then
         error("TPC-C tables exist already (" .. table.concat(found, ", ") ..
               "): run cleanup first")
      end
      print(string.format("Creating the TPC-C tables, loading %d warehouse(s) " ..
                          "in %d thread(s)...", sz.scale, threads))
      create_tables(drv, con)
   else
      wait_for_tables(drv, con)
   end
   -- A second prepare onto loaded tables stops at the first row it would
   -- add (thread 0 refuses it first).
   local first_item = math.floor(sz.items * tid / threads) + 1
   local last_item = math.floor(sz.items * (tid + 1) / threads)
   if first_item <= last_item and
      con:query_row("SELECT COUNT(*) FROM item WHERE i_id = " .. first_item) ~= "0"
   then
      error("the item table is loaded already: run cleanup first")
   end
   load_items(con, first_item, last_item)
   for w = tid + 1, sz.scale, threads do
      load_warehouse(con, sz, w)
   end
   con:disconnect()
end

local function cmd_cleanup()
   local drv = sysbench.sql.driver()
   local con = drv:connect()
   for _, t in ipairs(TABLES) do
      print("Dropping table '" .. t .. "'...")
      con:query("DROP TABLE IF EXISTS " .. t)
   end
   con:disconnect()
end

-- Consistency check ---------------------------------------------------------

-- Rows keyed by their first `nkey` columns joined with ":".
local function keyed(con, sql, nkey)
   local rs = con:query(sql)
   local out = {}
   for _ = 1, tonumber(rs.nrows) do
      local row = rs:fetch_row()
      local key = {}
      for i = 1, nkey do
         key[i] = row[i]
      end
      local vals = {}
      for i = nkey + 1, rs.nfields do
         vals[#vals + 1] = row[i]
      end
      out[table.concat(key, ":")] = vals
   end
   return out
end

local function cmd_check()
   local drv = sysbench.sql.driver()
   local con = drv:connect()
   require_tables(drv, con)

   local failures = {}
   local function fail(fmt, ...)
      local msg = string.format(fmt, ...)
      failures[#failures + 1] = msg
      print("  FAILED: " .. msg)
   end

   local warehouses = keyed(con, "SELECT w_id, w_ytd FROM warehouse", 1)
   local d_ytd = keyed(con, "SELECT d_w_id, SUM(d_ytd) FROM district GROUP BY d_w_id", 1)
   local nw = 0
   for w, v in pairs(warehouses) do
      nw = nw + 1
      local sum = d_ytd[w] and tonumber(d_ytd[w][1])
      if sum == nil or math.abs(tonumber(v[1]) - sum) > 0.005 then
         fail("condition 1, warehouse %s: W_YTD %s, sum(D_YTD) %s", w, v[1],
              tostring(d_ytd[w] and d_ytd[w][1]))
      end
   end
   print(string.format("check 1: W_YTD = sum(D_YTD) in %d warehouse(s)", nw))

   local districts = keyed(con, "SELECT d_w_id, d_id, d_next_o_id FROM district", 2)
   local orders = keyed(con, "SELECT o_w_id, o_d_id, MAX(o_id), SUM(o_ol_cnt) " ..
                           "FROM orders GROUP BY o_w_id, o_d_id", 2)
   local new_orders = keyed(con, "SELECT no_w_id, no_d_id, MAX(no_o_id), " ..
                               "MIN(no_o_id), COUNT(*) FROM new_order " ..
                               "GROUP BY no_w_id, no_d_id", 2)
   local lines = keyed(con, "SELECT ol_w_id, ol_d_id, COUNT(*) FROM order_line " ..
                          "GROUP BY ol_w_id, ol_d_id", 2)
   local nd, empty = 0, 0
   for k, v in pairs(districts) do
      nd = nd + 1
      local next_o = tonumber(v[1])
      local o = orders[k] or {}
      local no = new_orders[k]
      if tonumber(o[1]) ~= next_o - 1 then
         fail("condition 2, district %s: D_NEXT_O_ID - 1 = %d, max(O_ID) = %s",
              k, next_o - 1, tostring(o[1]))
      end
      if no == nil then
         -- Every order delivered: conditions 2's and 3's new-order parts
         -- have no rows to hold for.
         empty = empty + 1
      else
         if tonumber(no[1]) ~= next_o - 1 then
            fail("condition 2, district %s: D_NEXT_O_ID - 1 = %d, max(NO_O_ID) = %s",
                 k, next_o - 1, no[1])
         end
         if tonumber(no[1]) - tonumber(no[2]) + 1 ~= tonumber(no[3]) then
            fail("condition 3, district %s: max(NO_O_ID) - min(NO_O_ID) + 1 = %d, " ..
                    "new_order rows %s", k, tonumber(no[1]) - tonumber(no[2]) + 1, no[3])
         end
      end
      local l = lines[k] or {}
      if tonumber(o[2]) ~= tonumber(l[1]) then
         fail("condition 4, district %s: sum(O_OL_CNT) = %s, order_line rows %s",
              k, tostring(o[2]), tostring(l[1]))
      end
   end
   print(string.format("check 2: D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID) in %d " ..
                          "district(s) (%d without undelivered orders)", nd, empty))
   print(string.format("check 3: max(NO_O_ID) - min(NO_O_ID) + 1 = new_order rows " ..
                          "in %d district(s)", nd - empty))
   print(string.format("check 4: sum(O_OL_CNT) = order_line rows in %d district(s)", nd))
   con:disconnect()
   if nw == 0 or nd == 0 then
      error("TPC-C check: the tables are empty: run prepare first")
   end
   if #failures > 0 then
      error(string.format("TPC-C check: %d consistency condition(s) failed", #failures))
   end
   print("TPC-C consistency conditions 1-4 hold")
end

sysbench.cmdline.commands = {
   prepare = { cmd_prepare, sysbench.cmdline.PARALLEL_COMMAND },
   cleanup = { cmd_cleanup },
   check = { cmd_check },
}

-- The transactions ------------------------------------------------------------

local con, sz
local mix = { new_order = 0, payment = 0, order_status = 0, delivery = 0,
              stock_level = 0, rolled_back = 0 }

-- Another warehouse than w (w itself when there is only one).
local function other_warehouse(w)
   if sz.scale == 1 then
      return w
   end
   local o = uniform(1, sz.scale - 1)
   return o >= w and o + 1 or o
end

-- The id of the customer a payment or order-status is for: 60% by last
-- name (the middle one of those with it, ordered by first name).
local function pick_customer(w, d)
   if uniform(1, 100) <= 60 then
      local name = last_name(nurand(255, C_LAST_RUN, 0, sz.names))
      local rs = con:query(string.format(
                              "SELECT c_id FROM customer WHERE c_w_id = %d AND c_d_id = %d " ..
                                 "AND c_last = '%s' ORDER BY c_first", w, d, name))
      local ids = {}
      for i = 1, tonumber(rs.nrows) do
         ids[i] = rs:fetch_row()[1]
      end
      if #ids > 0 then
         return tonumber(ids[math.floor((#ids + 1) / 2)])
      end
   end
   return nurand(1023, C_ID, 1, sz.cpd)
end

local function new_order(w, d)
   local c = nurand(1023, C_ID, 1, sz.cpd)
   local count = uniform(5, 15)
   local rollback = uniform(1, 100) == 1
   local items = {}
   local all_local = 1
   for i = 1, count do
      local supply = w
      if sz.scale > 1 and uniform(1, 100) == 1 then
         supply = other_warehouse(w)
         all_local = 0
      end
      items[i] = { id = nurand(8191, C_ITEM, 1, sz.items), supply = supply,
                   qty = uniform(1, 10) }
   end
   table.sort(items, function(a, b)
                 return a.id < b.id or (a.id == b.id and a.supply < b.supply)
   end)
   if rollback then
      items[count].id = sz.items + 1
   end

   con:query("BEGIN")
   con:query_row(string.format(
                    "SELECT c_discount, c_last, c_credit, w_tax FROM customer, warehouse " ..
                       "WHERE w_id = %d AND c_w_id = w_id AND c_d_id = %d AND c_id = %d",
                    w, d, c))
   local next_o = con:query_row(string.format(
                                   "SELECT d_next_o_id, d_tax FROM district " ..
                                      "WHERE d_w_id = %d AND d_id = %d FOR UPDATE", w, d))
   local o = tonumber(next_o)
   con:query(string.format("UPDATE district SET d_next_o_id = d_next_o_id + 1 " ..
                              "WHERE d_w_id = %d AND d_id = %d", w, d))
   con:query(string.format("INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, " ..
                              "o_ol_cnt, o_all_local) VALUES (%d,%d,%d,%d,NOW(),%d,%d)",
                           o, d, w, c, count, all_local))
   con:query(string.format("INSERT INTO new_order (no_o_id, no_d_id, no_w_id) " ..
                              "VALUES (%d,%d,%d)", o, d, w))
   for n, it in ipairs(items) do
      local price = con:query_row("SELECT i_price, i_name, i_data FROM item WHERE i_id = " ..
                                     it.id)
      if price == nil then
         -- The unused item: the whole order is rolled back.
         con:query("ROLLBACK")
         mix.rolled_back = mix.rolled_back + 1
         return
      end
      local s_quantity = con:query_row(string.format(
         "SELECT s_quantity, s_data, s_dist_%02d FROM stock " ..
            "WHERE s_i_id = %d AND s_w_id = %d FOR UPDATE", d, it.id, it.supply))
      local left = tonumber(s_quantity) - it.qty
      if left < 10 then
         left = left + 91
      end
      con:query(string.format(
                   "UPDATE stock SET s_quantity = %d, s_ytd = s_ytd + %d, " ..
                      "s_order_cnt = s_order_cnt + 1, s_remote_cnt = s_remote_cnt + %d " ..
                      "WHERE s_i_id = %d AND s_w_id = %d",
                   left, it.qty, it.supply == w and 0 or 1, it.id, it.supply))
      con:query(string.format(
                   "INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, " ..
                      "ol_supply_w_id, ol_quantity, ol_amount, ol_dist_info) " ..
                      "VALUES (%d,%d,%d,%d,%d,%d,%d,%s,'%s')",
                   o, d, w, n, it.id, it.supply, it.qty,
                   money(it.qty * tonumber(price)), astring(24, 24)))
   end
   con:query("COMMIT")
   mix.new_order = mix.new_order + 1
end

local function payment(w, d)
   local amount = money(uniform(100, 500000) / 100)
   local cw, cd = w, d
   if sz.scale > 1 and uniform(1, 100) > 85 then
      cw, cd = other_warehouse(w), uniform(1, DISTRICTS)
   end
   con:query("BEGIN")
   con:query(string.format("UPDATE warehouse SET w_ytd = w_ytd + %s WHERE w_id = %d",
                           amount, w))
   local w_name = con:query_row(string.format(
                                   "SELECT w_name, w_street_1, w_street_2, w_city, w_state, " ..
                                      "w_zip FROM warehouse WHERE w_id = %d", w))
   con:query(string.format("UPDATE district SET d_ytd = d_ytd + %s " ..
                              "WHERE d_w_id = %d AND d_id = %d", amount, w, d))
   local d_name = con:query_row(string.format(
                                   "SELECT d_name, d_street_1, d_street_2, d_city, d_state, " ..
                                      "d_zip FROM district WHERE d_w_id = %d AND d_id = %d",
                                   w, d))
   local c = pick_customer(cw, cd)
   local credit, c_data = select(11, con:query_row(string.format(
      "SELECT c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, " ..
         "c_zip, c_phone, c_since, c_credit, c_data, c_credit_lim, c_discount, c_balance " ..
         "FROM customer WHERE c_w_id = %d AND c_d_id = %d AND c_id = %d FOR UPDATE",
      cw, cd, c)))
   local set_data = ""
   if credit == "BC" then
      local data = string.format("%d %d %d %d %d %s|", c, cd, cw, d, w, amount) ..
         (c_data or "")
      set_data = string.format(", c_data = '%s'", data:sub(1, 500))
   end
   con:query(string.format(
                "UPDATE customer SET c_balance = c_balance - %s, " ..
                   "c_ytd_payment = c_ytd_payment + %s, c_payment_cnt = c_payment_cnt + 1%s " ..
                   "WHERE c_w_id = %d AND c_d_id = %d AND c_id = %d",
                amount, amount, set_data, cw, cd, c))
   con:query(string.format(
                "INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, " ..
                   "h_amount, h_data) VALUES (%d,%d,%d,%d,%d,NOW(),%s,'%s    %s')",
                c, cd, cw, d, w, amount, w_name or "", d_name or ""))
   con:query("COMMIT")
   mix.payment = mix.payment + 1
end

local function order_status(w, d)
   con:query("BEGIN")
   local c = pick_customer(w, d)
   con:query_row(string.format(
                    "SELECT c_balance, c_first, c_middle, c_last FROM customer " ..
                       "WHERE c_w_id = %d AND c_d_id = %d AND c_id = %d", w, d, c))
   local o = con:query_row(string.format(
                              "SELECT o_id, o_carrier_id, o_entry_d FROM orders " ..
                                 "WHERE o_w_id = %d AND o_d_id = %d AND o_c_id = %d " ..
                                 "ORDER BY o_id DESC LIMIT 1", w, d, c))
   if o ~= nil then
      local rs = con:query(string.format(
                              "SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, " ..
                                 "ol_delivery_d FROM order_line WHERE ol_w_id = %d " ..
                                 "AND ol_d_id = %d AND ol_o_id = %d", w, d, o))
      for _ = 1, tonumber(rs.nrows) do
         rs:fetch_row()
      end
   end
   con:query("COMMIT")
   mix.order_status = mix.order_status + 1
end

local function delivery(w)
   local carrier = uniform(1, 10)
   con:query("BEGIN")
   for d = 1, DISTRICTS do
      local o = con:query_row(string.format(
                                 "SELECT no_o_id FROM new_order WHERE no_w_id = %d " ..
                                    "AND no_d_id = %d ORDER BY no_o_id LIMIT 1 FOR UPDATE",
                                 w, d))
      if o ~= nil then
         con:query(string.format("DELETE FROM new_order WHERE no_w_id = %d AND " ..
                                    "no_d_id = %d AND no_o_id = %s", w, d, o))
         local c = con:query_row(string.format(
                                    "SELECT o_c_id FROM orders WHERE o_w_id = %d " ..
                                       "AND o_d_id = %d AND o_id = %s", w, d, o))
         con:query(string.format("UPDATE orders SET o_carrier_id = %d WHERE o_w_id = %d " ..
                                    "AND o_d_id = %d AND o_id = %s", carrier, w, d, o))
         con:query(string.format("UPDATE order_line SET ol_delivery_d = NOW() " ..
                                    "WHERE ol_w_id = %d AND ol_d_id = %d AND ol_o_id = %s",
                                 w, d, o))
         local total = con:query_row(string.format(
                                        "SELECT SUM(ol_amount) FROM order_line " ..
                                           "WHERE ol_w_id = %d AND ol_d_id = %d " ..
                                           "AND ol_o_id = %s", w, d, o))
         con:query(string.format("UPDATE customer SET c_balance = c_balance + %s, " ..
                                    "c_delivery_cnt = c_delivery_cnt + 1 WHERE c_w_id = %d " ..
                                    "AND c_d_id = %d AND c_id = %s",
                                 money(tonumber(total) or 0), w, d, c))
      end
   end
   con:query("COMMIT")
   mix.delivery = mix.delivery + 1
end

local function stock_level(w, d)
   local threshold = uniform(10, 20)
   con:query("BEGIN")
   local next_o = con:query_row(string.format(
      "SELECT d_next_o_id FROM district WHERE d_w_id = %d AND d_id = %d", w, d))
   next_o = tonumber(next_o)
   con:query_row(string.format(
                    "SELECT COUNT(DISTINCT s_i_id) FROM order_line, stock " ..
                       "WHERE ol_w_id = %d AND ol_d_id = %d AND ol_o_id < %d " ..
                       "AND ol_o_id >= %d AND s_w_id = %d AND s_i_id = ol_i_id " ..
                       "AND s_quantity < %d", w, d, next_o, next_o - 20, w, threshold))
   con:query("COMMIT")
   mix.stock_level = mix.stock_level + 1
end

function thread_init()
   sz = sizes()
   local drv = sysbench.sql.driver()
   con = drv:connect()
   require_tables(drv, con)
end

function event()
   local w = uniform(1, sz.scale)
   local d = uniform(1, DISTRICTS)
   local t = uniform(1, 100)
   if t <= 45 then
      new_order(w, d)
   elseif t <= 88 then
      payment(w, d)
   elseif t <= 92 then
      order_status(w, d)
   elseif t <= 96 then
      delivery(w)
   else
      stock_level(w, d)
   end
end

-- After a deadlock, lock wait timeout or serialization failure: end what is
-- left of the transaction (MySQL rolls back only the statement on a lock wait
-- timeout) before the event starts again.
sysbench.hooks.before_restart_event = function(err)
   pcall(function() con:query("ROLLBACK") end)
end

function thread_done()
   if sysbench.opt.mix_report then
      print(string.format("tpcc mix, thread %d: new_order %d payment %d order_status %d " ..
                             "delivery %d stock_level %d rolled_back %d",
                          sysbench.tid, mix.new_order, mix.payment, mix.order_status,
                          mix.delivery, mix.stock_level, mix.rolled_back))
   end
   con:disconnect()
end
