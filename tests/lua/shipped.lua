-- A script run in environments (tests/lua.rs): its text travels with the
-- job into each one, its own option with it; nothing beside it does.

sysbench.cmdline.options = {
   loops = {"additions per event", 2000},
}

function event()
   local x = 0
   for i = 1, sysbench.opt.loops do
      x = x + i
   end
   assert(x > 0, "the loop ran")
end
