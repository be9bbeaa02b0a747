/* shimclock: TSC cycles and CLOCK_MONOTONIC nanoseconds for the Lua timing
 * driver (csrc/lua/driver.lua), as a C module any `lua` or `luajit` binary
 * loads with package.loadlib, so the interpreters stay as their makefiles
 * build them.  The fences are driver.c's: the timed region is what runs
 * between mark() and since(), nothing before or after it.
 * Built once per Lua API (5.1 for LuaJIT, 5.4, 5.5) by shimlab.lua.build. */
#include <stdint.h>
#include <time.h>
#include <x86intrin.h>
#include "lua.h"
#include "lauxlib.h"

static uint64_t mark_tsc, mark_ns, mark_cpu;

static uint64_t clock_ns(clockid_t which) {
    struct timespec ts;
    clock_gettime(which, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t now_ns(void) { return clock_ns(CLOCK_MONOTONIC); }

static int mark(lua_State *L) {
    (void)L;
    mark_cpu = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    mark_ns = now_ns();
    _mm_lfence();
    mark_tsc = __rdtsc();
    _mm_lfence();
    return 0;
}

/* Differences only: LuaJIT's numbers are doubles, exact to 2^53, which a
 * TSC reading after some months of uptime is not.  Cycles, wall-clock
 * nanoseconds and the process's CPU nanoseconds (which leave out the time
 * another process had this CPU: the machine is shared). */
static int since(lua_State *L) {
    unsigned aux;
    uint64_t t = __rdtscp(&aux);
    _mm_lfence();
    uint64_t ns = now_ns();
    uint64_t cpu = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    lua_pushnumber(L, (lua_Number)(t - mark_tsc));
    lua_pushnumber(L, (lua_Number)(ns - mark_ns));
    lua_pushnumber(L, (lua_Number)(cpu - mark_cpu));
    return 3;
}

/* TSC ticks per second against CLOCK_MONOTONIC over about 50 ms. */
static int hz(lua_State *L) {
    struct timespec pause = {0, 50 * 1000 * 1000};
    uint64_t c0 = __rdtsc(), n0 = now_ns();
    nanosleep(&pause, NULL);
    uint64_t c1 = __rdtsc(), n1 = now_ns();
    lua_pushnumber(L, (lua_Number)(c1 - c0) * 1e9 / (lua_Number)(n1 - n0));
    return 1;
}

static const luaL_Reg funcs[] = {{"mark", mark}, {"since", since}, {"hz", hz}, {NULL, NULL}};

int luaopen_shimclock(lua_State *L) {
#if LUA_VERSION_NUM >= 502
    luaL_newlib(L, funcs);
#else
    lua_newtable(L);
    luaL_register(L, NULL, funcs);
#endif
    return 1;
}
