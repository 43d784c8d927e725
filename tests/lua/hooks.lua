-- sysbench.hooks around the event loop (tests/lua.rs): report_intermediate
-- every --report-interval seconds, before_restart_event when an event is
-- restarted after an ignorable SQL error or a RESTART_EVENT error of its own.

sysbench.cmdline.options = {
   own_report = {"report intermediate figures through the hook", true},
}

local restarts = 0
local calls = 0

-- Set in init(): the options are parsed after the script's top level ran.
local function report(stat)
   assert(stat.time_interval > 0 and stat.time_total >= stat.time_interval)
   assert(stat.threads_running >= 1 and stat.latency_pct >= 0)
   assert(stat.queue_length == 0 and stat.concurrency == 0)
   print(string.format("interim t=%.0f events=%d reads=%d errors=%d",
                       stat.time_total, stat.events, stat.reads,
                       stat.errors))
   sysbench.report_default(stat)
end

function init()
   if sysbench.opt.own_report then
      sysbench.hooks.report_intermediate = report
   end
end

-- The query below fails (no such column): called ignorable here, it
-- restarts the event as a deadlock would.
sysbench.hooks.sql_error_ignorable = function(err)
   return err.sql_errmsg:find("nosuch") ~= nil
end

sysbench.hooks.before_restart_event = function(err)
   assert(err.errcode == sysbench.error.RESTART_EVENT, "errcode")
   restarts = restarts + 1
end

function thread_init()
   con = sysbench.sql.driver():connect()
end

-- Each event takes three calls: the first raises RESTART_EVENT itself, the
-- second fails an ignorable query, the third succeeds.
function event()
   calls = calls + 1
   if calls % 3 == 1 then
      error({ errcode = sysbench.error.RESTART_EVENT })
   elseif calls % 3 == 2 then
      con:query("SELECT nosuch FROM sqlite_master")
   end
   con:query("SELECT 1")
   ffi.C.usleep(20000)
end

function thread_done()
   print(string.format("restarts %d calls %d", restarts, calls))
   con:disconnect()
end
