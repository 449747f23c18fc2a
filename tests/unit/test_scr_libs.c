/*
 * test_scr_libs — the scripting libraries cmsgpack and struct against what
 * Redis 7.0.15 answers. Each case is a Lua expression; the test runs
 * `<prelude> return show(<expression>)` in a fresh Lua 5.1 state holding
 * the two libraries, under the chunk name Redis gives scripts, and compares
 * the string with the one redis-server 7.0.15 returned for
 * `EVAL "<prelude> return show(<expression>)" 0`. The prelude (locals only:
 * Redis refuses new globals) defines hex(s) and show(...), which writes
 * every value, nils included, with numbers as %.17g and tables sorted, so a
 * float that should be a double, a lost nil or a different error text all
 * differ. Errors are caught with pcall inside the expression, so their
 * texts are Lua's and the libraries' own.
 *
 * Then inputs that are malformed on purpose, random and mutated, which
 * must fail cleanly (run it under the sanitizer build to see they read
 * nothing out of bounds).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "scr_libs.h"
#include "t_rnd.h"

/* A Lua expression and what Redis 7.0.15 made of it. */
struct scr_case {
    const char *lua;
    const char *want;
};

/* clang-format off */
static const char prelude[] =
    "local function hex(s) return (string.gsub(s, '.', function(c) return "
    "string.format('%02x', string.byte(c)) end)) end local one; one = "
    "function(v, d) local t = type(v) if t == 'number' then return 'n' .. "
    "string.format('%.17g', v) elseif t == 'string' then return \"'\" .. "
    "string.gsub(v, '[^ -~]', function(c) return string.format('\\\\x%02x', "
    "string.byte(c)) end) .. \"'\" elseif t == 'table' then if d > 20 then "
    "return '{...}' end local o = {} for k, x in pairs(v) do o[#o + 1] = "
    "one(k, d + 1) .. '=' .. one(x, d + 1) end table.sort(o) return '{' .. "
    "table.concat(o, ',') .. '}' else return tostring(v) end end local "
    "function show(...) local o = {} for i = 1, select('#', ...) do o[i] = "
    "one((select(i, ...)), 0) end return table.concat(o, ' ') end ";

static const struct scr_case mp_pack_cases[] = {
    {"hex(cmsgpack.pack(1, \"a\", {1,2}, {a=1}, 1.5, -1, 2^40, true, nil))",
     "'01a16192010281a16101ca3fc00000ffcf0000010000000000c3c0'"},
    {"hex(cmsgpack.pack(0, 127, 128, 255, 256, 65535, 65536, 4294967295, 4294967296, 2^53, 2^63 - 2^11))",
     "'007fcc80ccffcd0100cdffffce00010000ceffffffffcf0000000100000000cf0020000000000000cf7ffffffffffff800'"},
    {"hex(cmsgpack.pack(-1, -32, -33, -128, -129, -32768, -32769, -2147483648, -2147483649, -2^63))",
     "'ffe0d0dfd080d1ff7fd18000d2ffff7fffd280000000d3ffffffff7fffffffd38000000000000000'"},
    {"hex(cmsgpack.pack(2^63, -2^63 - 2^11, 2^64, 1/0, -1/0))",
     "'ca5f000000cbc3e0000000000001ca5f800000ca7f800000caff800000'"},
    {"hex(cmsgpack.pack(0/0))",
     "'cbfff8000000000000'"},
    {"hex(cmsgpack.pack(0.5, 0.1, -2.25, 1e300, 1e-300, 3.4028234663852886e38, 3.4028236e38, 1.401298464324817e-45))",
     "'ca3f000000cb3fb999999999999acac0100000cb7e37e43c8800759ccb01a56e1fc2f8f359ca7f7fffffcb47effffff514a7bcca00000001'"},
    {"hex(cmsgpack.pack(-0.0, 0.0))",
     "'0000'"},
    {"hex(cmsgpack.pack(false, true, nil))",
     "'c2c3c0'"},
    {"hex(cmsgpack.pack(function() end, coroutine.create(function() end)))",
     "'c0c0'"},
    {"hex(cmsgpack.pack(''))",
     "'a0'"},
    {"hex(cmsgpack.pack(string.rep('x', 31)))",
     "'bf78787878787878787878787878787878787878787878787878787878787878'"},
    {"hex(cmsgpack.pack(string.rep('x', 32)):sub(1, 8))",
     "'d920787878787878'"},
    {"hex(cmsgpack.pack(string.rep('x', 255)):sub(1, 8))",
     "'d9ff787878787878'"},
    {"hex(cmsgpack.pack(string.rep('x', 256)):sub(1, 8))",
     "'da01007878787878'"},
    {"hex(cmsgpack.pack(string.rep('x', 65535)):sub(1, 8))",
     "'daffff7878787878'"},
    {"hex(cmsgpack.pack(string.rep('x', 65536)):sub(1, 12))",
     "'db0001000078787878787878'"},
    {"#cmsgpack.pack(string.rep('x', 65536))",
     "n65541"},
    {"hex(cmsgpack.pack('a\\0b\\255'))",
     "'a4610062ff'"},
    {"hex(cmsgpack.pack({}))",
     "'90'"},
    {"hex(cmsgpack.pack({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}))",
     "'9f0102030405060708090a0b0c0d0e0f'"},
    {"hex(cmsgpack.pack({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}))",
     "'dc00100102030405060708090a0b0c0d0e0f10'"},
    {"hex((function() local t = {} for i = 1, 65535 do t[i] = 0 end return cmsgpack.pack(t):sub(1, 6) end)())",
     "'dcffff000000'"},
    {"hex((function() local t = {} for i = 1, 65536 do t[i] = 0 end return cmsgpack.pack(t):sub(1, 6) end)())",
     "'dd0001000000'"},
    {"hex((function() local t = {} for i = 1, 16 do t['k' .. i] = i end return cmsgpack.pack(t):sub(1, 3) end)())",
     "'de0010'"},
    {"hex((function() local t = {} for i = 1, 65536 do t[-i] = 0 end return cmsgpack.pack(t):sub(1, 6) end)())",
     "'df00010000d2'"},
    {"hex(cmsgpack.pack({a = 1, b = 2, c = 3}))",
     "'83a16101a16303a16202'"},
    {"hex(cmsgpack.pack({[1] = 1, [3] = 3}))",
     "'8201010303'"},
    {"hex(cmsgpack.pack({[2] = 2}))",
     "'810202'"},
    {"hex(cmsgpack.pack({[0] = 0, 1}))",
     "'8201010000'"},
    {"hex(cmsgpack.pack({[1.5] = 1}))",
     "'81ca3fc0000001'"},
    {"hex(cmsgpack.pack({[-1] = 1}))",
     "'81ff01'"},
    {"hex(cmsgpack.pack({[2^31] = 1}))",
     "'81ce8000000001'"},
    {"hex(cmsgpack.pack({[2^31 - 1] = 1}))",
     "'81ce7fffffff01'"},
    {"hex(cmsgpack.pack({1, 2, nil, 4}))",
     "'83010102020404'"},
    {"hex(cmsgpack.pack({nil, nil, 3}))",
     "'810303'"},
    {"hex(cmsgpack.pack({1, 2, x = 3}))",
     "'8301010202a17803'"},
    {"hex(cmsgpack.pack({['1'] = 1}))",
     "'81a13101'"},
    {"hex(cmsgpack.pack({[true] = false}))",
     "'81c3c2'"},
    {"hex(cmsgpack.pack({[{}] = {1}}))",
     "'81909101'"},
    {"hex(cmsgpack.pack({{{{{{{{{{{{{{{{{1}}}}}}}}}}}}}}}}}))",
     "'91919191919191919191919191919191c0'"},
    {"hex(cmsgpack.pack({{{{{{{{{{{{{{{{1}}}}}}}}}}}}}}}}))",
     "'9191919191919191919191919191919101'"},
    {"hex(cmsgpack.pack({{{{{{{{{{{{{{{1}}}}}}}}}}}}}}}))",
     "'91919191919191919191919191919101'"},
    {"hex((function() local t = {} t[1] = t return cmsgpack.pack(t) end)())",
     "'91919191919191919191919191919191c0'"},
    {"hex((function() local t = {} t.x = t return cmsgpack.pack(t) end)())",
     "'81a17881a17881a17881a17881a17881a17881a17881a17881a17881a17881a17881a17881a17881a17881a17881a178c0'"},
    {"hex((function() local t = {} t[t] = 1 return cmsgpack.pack(t) end)())",
     "'81818181818181818181818181818181c001010101010101010101010101010101'"},
    {"hex(cmsgpack.pack(setmetatable({1, 2}, {__index = function() return 9 end})))",
     "'920102'"},
    {"hex(cmsgpack.pack(setmetatable({}, {__index = function() return 9 end})))",
     "'90'"},
    {"hex(cmsgpack.pack(1, 2, 3, {4, 5}, 'six'))",
     "'010203920405a3736978'"},
    {"pcall(cmsgpack.pack)",
     "false 'bad argument #0 to '?' (MessagePack pack needs input.)'"},
    {"pcall(function() local x = cmsgpack.pack() return x end)",
     "false 'user_script:1: bad argument #0 to 'pack' (MessagePack pack needs input.)'"},
    {"(function() local t = {} for i = 1, 3999 do t[i] = i end return #cmsgpack.pack(unpack(t)) end)()",
     "n11615"},
    {"pcall(function() local t = {} for i = 1, 4000 do t[i] = i end return #cmsgpack.pack(unpack(t)) end)",
     "true n11618"},
    {"pcall(function() local t = {} for i = 1, 4001 do t[i] = i end return #cmsgpack.pack(unpack(t)) end)",
     "false 'user_script:1: bad argument #0 to 'pack' (Too many arguments for MessagePack pack.)'"},
    {"pcall(function() local t = {} for i = 1, 4000 do t[i] = i end t[4000] = {1} return #cmsgpack.pack(unpack(t)) end)",
     "false 'user_script:1: stack overflow (in function table_is_an_array)'"},
    {"pcall(function() local t = {} for i = 1, 3999 do t[i] = i end t[3999] = {1} return #cmsgpack.pack(unpack(t)) end)",
     "true n11614"},
    {"pcall(function() local t = {} for i = 1, 3998 do t[i] = i end t[3998] = {a = {1}} return #cmsgpack.pack(unpack(t)) end)",
     "true n11614"},
    {"pcall(function() local t = {} for i = 1, 3997 do t[i] = i end t[3997] = {a = {b = {1}}} return #cmsgpack.pack(unpack(t)) end)",
     "true n11614"},
    {"pcall(function() local t = {} for i = 1, 3990 do t[i] = i end t[3990] = {{{{{{{{{{{{{{{{{1}}}}}}}}}}}}}}}}} return #cmsgpack.pack(unpack(t)) end)",
     "true n11602"},
    {"pcall(function() local t = {} for i = 1, 3980 do t[i] = i end t[3980] = {{{{{{{{{{{{{{{{{1}}}}}}}}}}}}}}}}} return #cmsgpack.pack(unpack(t)) end)",
     "true n11572"},
    {"pcall(function() local t = {} for i = 1, 3985 do t[i] = i end t[1] = {{{{{{{{{{{{{{{{{1}}}}}}}}}}}}}}}}} return #cmsgpack.pack(unpack(t)) end)",
     "true n11589"},
    {"cmsgpack._NAME, cmsgpack._VERSION, cmsgpack._COPYRIGHT, cmsgpack._DESCRIPTION",
     "'cmsgpack' 'lua-cmsgpack 0.4.0' 'Copyright (C) 2012, Salvatore Sanfilippo' 'MessagePack C implementation for Lua'"},
    {"type(cmsgpack.pack), type(cmsgpack.unpack), type(cmsgpack.unpack_one), type(cmsgpack.unpack_limit)",
     "'function' 'function' 'function' 'function'"},
};

static const struct scr_case mp_unpack_cases[] = {
    {"cmsgpack.unpack(cmsgpack.pack(1, \"a\", {1,2}, {a=1}, 1.5, -1, 2^40, true, nil))",
     "n1 'a' {n1=n1,n2=n2} {'a'=n1} n1.5 n-1 n1099511627776 true nil"},
    {"cmsgpack.unpack('')",
     ""},
    {"cmsgpack.unpack('\\0\\127\\128\\144\\160\\192\\194\\195')",
     "n0 n127 {} {} '' nil false true"},
    {"cmsgpack.unpack('\\224\\255')",
     "n-32 n-1"},
    {"cmsgpack.unpack('\\204\\255\\205\\255\\255\\206\\255\\255\\255\\255')",
     "n255 n65535 n4294967295"},
    {"cmsgpack.unpack('\\207\\0\\0\\0\\1\\0\\0\\0\\0\\207\\127\\255\\255\\255\\255\\255\\255\\255')",
     "n4294967296 n9.2233720368547758e+18"},
    {"cmsgpack.unpack('\\207\\128\\0\\0\\0\\0\\0\\0\\0\\207\\255\\255\\255\\255\\255\\255\\255\\255')",
     "n-9.2233720368547758e+18 n-1"},
    {"cmsgpack.unpack('\\208\\128\\208\\127\\209\\128\\0\\209\\255\\255\\210\\128\\0\\0\\0\\210\\255\\255\\255\\254')",
     "n-128 n127 n-32768 n-1 n-2147483648 n-2"},
    {"cmsgpack.unpack('\\211\\128\\0\\0\\0\\0\\0\\0\\0\\211\\255\\255\\255\\255\\255\\255\\255\\255\\211\\0\\0\\0\\0\\0\\0\\0\\5')",
     "n-9.2233720368547758e+18 n-1 n5"},
    {"cmsgpack.unpack('\\202\\63\\192\\0\\0\\202\\127\\192\\0\\0\\203\\63\\185\\153\\153\\153\\153\\153\\154')",
     "n1.5 nnan n0.10000000000000001"},
    {"cmsgpack.unpack('\\202\\255\\128\\0\\0\\203\\0\\0\\0\\0\\0\\0\\0\\1')",
     "n-inf n4.9406564584124654e-324"},
    {"cmsgpack.unpack('\\217\\3abc\\218\\0\\2de\\219\\0\\0\\0\\1f\\217\\0')",
     "'abc' 'de' 'f' ''"},
    {"cmsgpack.unpack('\\220\\0\\2\\1\\2\\221\\0\\0\\0\\1\\3')",
     "{n1=n1,n2=n2} {n1=n3}"},
    {"cmsgpack.unpack('\\222\\0\\1\\1\\2\\223\\0\\0\\0\\1\\161k\\161v')",
     "{n1=n2} {'k'='v'}"},
    {"cmsgpack.unpack('\\146\\145\\1\\129\\161a\\146\\2\\3')",
     "{n1={n1=n1},n2={'a'={n1=n2,n2=n3}}}"},
    {"cmsgpack.unpack('\\130\\1\\192\\2\\3')",
     "{n2=n3}"},
    {"cmsgpack.unpack('\\145\\192')",
     "{}"},
    {"cmsgpack.unpack('\\147\\1\\192\\3')",
     "{n1=n1,n3=n3}"},
    {"pcall(cmsgpack.unpack, '\\129\\192\\1')",
     "false 'table index is nil'"},
    {"pcall(cmsgpack.unpack, '\\129\\203\\255\\248\\0\\0\\0\\0\\0\\0\\1')",
     "false 'table index is NaN'"},
    {"pcall(cmsgpack.unpack, '\\193')",
     "false 'Bad data format in input.'"},
    {"pcall(cmsgpack.unpack, '\\196\\1a')",
     "false 'Bad data format in input.'"},
    {"pcall(cmsgpack.unpack, '\\197\\0\\1a')",
     "false 'Bad data format in input.'"},
    {"pcall(cmsgpack.unpack, '\\198\\0\\0\\0\\1a')",
     "false 'Bad data format in input.'"},
    {"pcall(cmsgpack.unpack, '\\199\\1\\1a')",
     "false 'Bad data format in input.'"},
    {"pcall(cmsgpack.unpack, '\\200\\0\\1\\1a')",
     "false 'Bad data format in input.'"},
    {"pcall(cmsgpack.unpack, '\\201\\0\\0\\0\\1\\1a')",
     "false 'Bad data format in input.'"},
    {"pcall(cmsgpack.unpack, '\\212\\1a')",
     "false 'Bad data format in input.'"},
    {"pcall(cmsgpack.unpack, '\\213\\1ab')",
     "false 'Bad data format in input.'"},
    {"pcall(cmsgpack.unpack, '\\214\\1abcd')",
     "false 'Bad data format in input.'"},
    {"pcall(cmsgpack.unpack, '\\215\\1abcdefgh')",
     "false 'Bad data format in input.'"},
    {"pcall(cmsgpack.unpack, '\\216\\1abcdefghabcdefgh')",
     "false 'Bad data format in input.'"},
    {"pcall(cmsgpack.unpack, '\\1\\193')",
     "false 'Bad data format in input.'"},
    {"pcall(cmsgpack.unpack, '\\204')",
     "false 'Missing bytes in input.'"},
    {"pcall(cmsgpack.unpack, '\\205\\1')",
     "false 'Missing bytes in input.'"},
    {"pcall(cmsgpack.unpack, '\\206\\1\\2\\3')",
     "false 'Missing bytes in input.'"},
    {"pcall(cmsgpack.unpack, '\\207\\1\\2\\3\\4\\5\\6\\7')",
     "false 'Missing bytes in input.'"},
    {"pcall(cmsgpack.unpack, '\\211\\1\\2\\3\\4\\5\\6\\7')",
     "false 'Missing bytes in input.'"},
    {"pcall(cmsgpack.unpack, '\\202\\1\\2\\3')",
     "false 'Missing bytes in input.'"},
    {"pcall(cmsgpack.unpack, '\\203\\1\\2\\3\\4\\5\\6\\7')",
     "false 'Missing bytes in input.'"},
    {"pcall(cmsgpack.unpack, '\\163ab')",
     "false 'Missing bytes in input.'"},
    {"pcall(cmsgpack.unpack, '\\217')",
     "false 'Missing bytes in input.'"},
    {"pcall(cmsgpack.unpack, '\\217\\3ab')",
     "false 'Missing bytes in input.'"},
    {"pcall(cmsgpack.unpack, '\\218\\0')",
     "false 'Missing bytes in input.'"},
    {"pcall(cmsgpack.unpack, '\\218\\0\\3ab')",
     "false 'Missing bytes in input.'"},
    {"pcall(cmsgpack.unpack, '\\219\\0\\0\\0')",
     "false 'Missing bytes in input.'"},
    {"pcall(cmsgpack.unpack, '\\219\\255\\255\\255\\255ab')",
     "false 'Missing bytes in input.'"},
    {"pcall(cmsgpack.unpack, '\\220\\0')",
     "false 'Missing bytes in input.'"},
    {"pcall(cmsgpack.unpack, '\\220\\0\\2\\1')",
     "false 'Missing bytes in input.'"},
    {"pcall(cmsgpack.unpack, '\\221\\255\\255\\255\\255\\1')",
     "false 'Missing bytes in input.'"},
    {"pcall(cmsgpack.unpack, '\\222\\0\\1\\1')",
     "false 'Missing bytes in input.'"},
    {"pcall(cmsgpack.unpack, '\\223\\255\\255\\255\\255')",
     "false 'Missing bytes in input.'"},
    {"pcall(cmsgpack.unpack, '\\146\\1')",
     "false 'Missing bytes in input.'"},
    {"pcall(cmsgpack.unpack, '\\130\\1\\2\\3')",
     "false 'Missing bytes in input.'"},
    {"pcall(cmsgpack.unpack, '\\145\\193')",
     "false 'Bad data format in input.'"},
    {"pcall(cmsgpack.unpack)",
     "false 'bad argument #1 to '?' (string expected, got no value)'"},
    {"pcall(cmsgpack.unpack, {})",
     "false 'bad argument #1 to '?' (string expected, got table)'"},
    {"cmsgpack.unpack(123)",
     "n49 n50 n51"},
    {"cmsgpack.unpack('\\1', 'ignored')",
     "n1"},
    {"pcall(function() local x = cmsgpack.unpack('\\193') return x end)",
     "false 'user_script:1: Bad data format in input.'"},
    {"select('#', cmsgpack.unpack(string.rep('\\1', 7990)))",
     "n7990"},
    {"pcall(function() return select('#', cmsgpack.unpack(string.rep('\\1', 7997))) end)",
     "true n7997"},
    {"pcall(function() return select('#', cmsgpack.unpack(string.rep('\\1', 7998))) end)",
     "true n7998"},
    {"pcall(function() return select('#', cmsgpack.unpack(string.rep('\\1', 7999))) end)",
     "true n7999"},
    {"pcall(function() return select('#', cmsgpack.unpack(string.rep('\\1', 8000))) end)",
     "false 'user_script:1: stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)'"},
    {"pcall(cmsgpack.unpack, string.rep('\\145', 3997) .. '\\1')",
     "true {n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={...}}}}}}}}}}}}}}}}}}}}}}"},
    {"pcall(cmsgpack.unpack, string.rep('\\145', 3998) .. '\\1')",
     "true {n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={...}}}}}}}}}}}}}}}}}}}}}}"},
    {"pcall(cmsgpack.unpack, string.rep('\\145', 3999) .. '\\1')",
     "true {n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={...}}}}}}}}}}}}}}}}}}}}}}"},
    {"pcall(cmsgpack.unpack, string.rep('\\145', 100000))",
     "false 'stack overflow (in function mp_decode_to_lua_array)'"},
    {"pcall(cmsgpack.unpack, string.rep('\\129\\1', 2665) .. '\\1\\1')",
     "true {n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={...}}}}}}}}}}}}}}}}}}}}}} n1"},
    {"pcall(cmsgpack.unpack, string.rep('\\129\\1', 2666) .. '\\1\\1')",
     "true {n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={...}}}}}}}}}}}}}}}}}}}}}} n1"},
    {"pcall(cmsgpack.unpack, string.rep('\\129\\1', 2667) .. '\\1\\1')",
     "true {n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={n1={...}}}}}}}}}}}}}}}}}}}}}} n1"},
    {"pcall(cmsgpack.unpack, string.rep('\\129\\1', 4000) .. '\\1\\1')",
     "false 'stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)'"},
    {"pcall(cmsgpack.unpack, string.rep('\\129', 100000))",
     "false 'stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)'"},
    {"pcall(cmsgpack.unpack, string.rep('\\221\\255\\255\\255\\255', 10000))",
     "false 'stack overflow (in function mp_decode_to_lua_array)'"},
    {"cmsgpack.unpack_one('\\1\\2\\3')",
     "n1 n1"},
    {"cmsgpack.unpack_one('\\1\\2\\3', 1)",
     "n2 n2"},
    {"cmsgpack.unpack_one('\\1\\2\\3', 2)",
     "n-1 n3"},
    {"cmsgpack.unpack_one('\\1\\2\\3', 3)",
     "n-1"},
    {"cmsgpack.unpack_one('\\1\\2\\3', 2.9)",
     "n-1 n3"},
    {"cmsgpack.unpack_one('')",
     "n-1"},
    {"cmsgpack.unpack_one('\\146\\1\\2\\3')",
     "n3 {n1=n1,n2=n2}"},
    {"pcall(cmsgpack.unpack_one, '\\1\\2\\3', 4)",
     "false 'Start offset 4 greater than input length 3.'"},
    {"pcall(cmsgpack.unpack_one, '\\1\\2\\3', -1)",
     "false 'Invalid request to unpack with offset of -1 and limit of 3.'"},
    {"pcall(cmsgpack.unpack_one, '\\1\\2\\3', 2^32 + 5)",
     "false 'Start offset 5 greater than input length 3.'"},
    {"pcall(cmsgpack.unpack_one, '\\1\\2\\3', 'x')",
     "false 'bad argument #2 to '?' (number expected, got string)'"},
    {"pcall(cmsgpack.unpack_one, '\\1\\2\\3', '1')",
     "true n2 n2"},
    {"pcall(cmsgpack.unpack_one)",
     "false 'bad argument #1 to '?' (string expected, got no value)'"},
    {"pcall(cmsgpack.unpack_one, nil, 'x')",
     "false 'bad argument #2 to '?' (number expected, got string)'"},
    {"pcall(cmsgpack.unpack_one, '\\193')",
     "false 'Bad data format in input.'"},
    {"pcall(cmsgpack.unpack_one, '\\1\\193', 1)",
     "false 'Bad data format in input.'"},
    {"cmsgpack.unpack_one('\\1\\193')",
     "n1 n1"},
    {"cmsgpack.unpack_limit('\\1\\2\\3\\4', 2)",
     "n2 n1 n2"},
    {"cmsgpack.unpack_limit('\\1\\2\\3\\4', 2, 2)",
     "n-1 n3 n4"},
    {"cmsgpack.unpack_limit('\\1\\2\\3\\4', 9, 1)",
     "n-1 n2 n3 n4"},
    {"cmsgpack.unpack_limit('\\1\\2\\3\\4', 0)",
     "n1 n2 n3 n4"},
    {"cmsgpack.unpack_limit('\\1\\2\\3\\4', 0, 1)",
     "n1"},
    {"cmsgpack.unpack_limit('\\1\\2\\3\\4', 1, 4)",
     "n-1"},
    {"cmsgpack.unpack_limit('', 1)",
     "n-1"},
    {"pcall(cmsgpack.unpack_limit, '\\1\\2\\3', -1, 5)",
     "false 'Invalid request to unpack with offset of 5 and limit of 3.'"},
    {"pcall(cmsgpack.unpack_limit, '\\1\\2\\3', 1, 5)",
     "false 'Start offset 5 greater than input length 3.'"},
    {"pcall(cmsgpack.unpack_limit, '\\1\\2\\3')",
     "false 'bad argument #2 to '?' (number expected, got no value)'"},
    {"pcall(cmsgpack.unpack_limit, '\\1\\2\\3', 'x')",
     "false 'bad argument #2 to '?' (number expected, got string)'"},
    {"pcall(cmsgpack.unpack_limit, '\\1\\2\\3', 1, 'x')",
     "false 'bad argument #3 to '?' (number expected, got string)'"},
    {"pcall(cmsgpack.unpack_limit, '\\1\\2\\3', 2^31, 0)",
     "true n-1 n1 n2 n3"},
    {"pcall(cmsgpack.unpack_limit, '\\1\\2\\193', 5)",
     "false 'Bad data format in input.'"},
};

static const struct scr_case st_cases[] = {
    {"hex(struct.pack('>bBhHlLTiI', -1, 255, -2, 65534, -3, 2^64 - 2^11, 5, -4, 4294967295))",
     "'fffffffefffefffffffffffffffdfffffffffffff8000000000000000005fffffffcffffffff'"},
    {"hex(struct.pack('<bBhHlLTiI', -1, 255, -2, 65534, -3, 2^64 - 2^11, 5, -4, 4294967295))",
     "'fffffefffefffdffffffffffffff00f8ffffffffffff0500000000000000fcffffffffffffff'"},
    {"hex(struct.pack('bhil', 1, 2, 3, 4))",
     "'010200030000000400000000000000'"},
    {"hex(struct.pack('>i1i2i3i5i7i8', 1, 2, 3, 5, 7, -8))",
     "'010002000003000000000500000000000007fffffffffffffff8'"},
    {"hex(struct.pack('<I3I6', 0x123456, 0x010203040506))",
     "'563412060504030201'"},
    {"hex(struct.pack('>b', 128))",
     "'80'"},
    {"hex(struct.pack('>b', 256 + 7))",
     "'07'"},
    {"hex(struct.pack('>B', -1))",
     "'ff'"},
    {"hex(struct.pack('>h', 1.9), struct.pack('>h', -1.9))",
     "'0001'"},
    {"hex(struct.pack('>L', 2^64))",
     "'0000000000000000'"},
    {"hex(struct.pack('>L', 2^63))",
     "'8000000000000000'"},
    {"hex(struct.pack('>L', 2^70))",
     "'0000000000000000'"},
    {"hex(struct.pack('>L', 1/0))",
     "'0000000000000000'"},
    {"hex(struct.pack('>L', 0/0))",
     "'8000000000000000'"},
    {"hex(struct.pack('>l', -1/0))",
     "'8000000000000000'"},
    {"hex(struct.pack('>l', -2^64))",
     "'8000000000000000'"},
    {"hex(struct.pack('>l', -2^63))",
     "'8000000000000000'"},
    {"hex(struct.pack('<i16', -1))",
     "'ffffffffffffffff0000000000000000'"},
    {"hex(struct.pack('>i16', -1))",
     "'0000000000000000ffffffffffffffff'"},
    {"hex(struct.pack('>i32', 1))",
     "'0000000000000000000000000000000000000000000000000000000000000001'"},
    {"hex(struct.pack('i0', 5))",
     "''"},
    {"hex(struct.pack('>fd', 1.5, 0.1))",
     "'3fc000003fb999999999999a'"},
    {"hex(struct.pack('<fd', 1.5, 0.1))",
     "'0000c03f9a9999999999b93f'"},
    {"hex(struct.pack('fd', -0.0, 1/0))",
     "'00000080000000000000f0ff'"},
    {"hex(struct.pack('>f', 1e300))",
     "'7f800000'"},
    {"hex(struct.pack('>f', 0.1))",
     "'3dcccccd'"},
    {"hex(struct.pack('xbxx', 1))",
     "'00010000'"},
    {"hex(struct.pack('!bi', 1, 2))",
     "'0100000002000000'"},
    {"hex(struct.pack('!2bi', 1, 2))",
     "'010002000000'"},
    {"hex(struct.pack('!bhbibdbl', 1, 2, 3, 4, 5, 6, 7, 8))",
     "'01000200030000000400000005000000000000000000184007000000000000000800000000000000'"},
    {"hex(struct.pack('!4bd', 1, 2))",
     "'010000000000000000000040'"},
    {"hex(struct.pack('!bi3', 1, 2))",
     "'010000020000'"},
    {"hex(struct.pack('!b!1i', 1, 2))",
     "'0102000000'"},
    {"hex(struct.pack('!bx', 1))",
     "'0100'"},
    {"hex(struct.pack('!bc3', 1, 'abc'))",
     "'01616263'"},
    {"hex(struct.pack('!bsi', 1, 'a', 2))",
     "'0161000002000000'"},
    {"hex(struct.pack('s', 'hello'))",
     "'68656c6c6f00'"},
    {"hex(struct.pack('s', 'a\\0b'))",
     "'61006200'"},
    {"hex(struct.pack('c0', 'hello'))",
     "'68656c6c6f'"},
    {"hex(struct.pack('c3', 'hello'))",
     "'68656c'"},
    {"hex(struct.pack('c', 'hello'))",
     "'68'"},
    {"hex(struct.pack('c05', 'hello'))",
     "'68656c6c6f'"},
    {"hex(struct.pack(' > i < i ', 1, 1))",
     "'0000000101000000'"},
    {"hex(struct.pack('', 1))",
     "''"},
    {"hex(struct.pack('>i', '12'))",
     "'0000000c'"},
    {"hex(struct.pack('>c2', 12))",
     "'3132'"},
    {"pcall(struct.pack, 'c5', 'ab')",
     "false 'bad argument #3 to '?' (string too short)'"},
    {"pcall(struct.pack, 'bc5', 1, 'ab')",
     "false 'bad argument #4 to '?' (string too short)'"},
    {"pcall(struct.pack, 's', 1)",
     "true '1\\x00'"},
    {"pcall(struct.pack, 's', {})",
     "false 'bad argument #2 to '?' (string expected, got table)'"},
    {"pcall(struct.pack, 'i')",
     "false 'bad argument #2 to '?' (number expected, got nil)'"},
    {"pcall(struct.pack, 'ii', 1)",
     "false 'bad argument #3 to '?' (number expected, got nil)'"},
    {"pcall(struct.pack, 'i', 'x')",
     "false 'bad argument #2 to '?' (number expected, got string)'"},
    {"pcall(struct.pack, 'f', nil)",
     "false 'bad argument #2 to '?' (number expected, got nil)'"},
    {"pcall(struct.pack)",
     "false 'bad argument #1 to '?' (string expected, got no value)'"},
    {"pcall(struct.pack, {})",
     "false 'bad argument #1 to '?' (string expected, got table)'"},
    {"pcall(struct.pack, 'z')",
     "false 'bad argument #1 to '?' (invalid format option 'z')'"},
    {"pcall(struct.pack, 'b3', 1)",
     "false 'bad argument #1 to '?' (invalid format option '3')'"},
    {"pcall(struct.pack, 'i33', 1)",
     "false 'integral size 33 is larger than limit of 32'"},
    {"pcall(struct.pack, 'I99999999999')",
     "false 'integral size overflow'"},
    {"pcall(struct.pack, 'c99999999999')",
     "false 'integral size overflow'"},
    {"pcall(struct.pack, '!3')",
     "false 'alignment 3 is not a power of 2'"},
    {"pcall(struct.pack, '!0')",
     "false 'alignment 0 is not a power of 2'"},
    {"pcall(struct.pack, '!2147483648')",
     "false 'integral size overflow'"},
    {"pcall(struct.pack, '\\255')",
     "false 'bad argument #1 to '?' (invalid format option '\\xff')'"},
    {"pcall(struct.pack, '=')",
     "false 'bad argument #1 to '?' (invalid format option '=')'"},
    {"pcall(struct.pack, 'q', 1)",
     "false 'bad argument #1 to '?' (invalid format option 'q')'"},
    {"pcall(function() local x = struct.pack('z') return x end)",
     "false 'user_script:1: bad argument #1 to 'pack' (invalid format option 'z')'"},
    {"#struct.pack(string.rep('c100', 200), unpack((function() local t = {} for i = 1, 200 do t[i] = string.rep('y', 100) end return t end)()))",
     "n20000"},
    {"struct.unpack('>bBhHlLTiI', struct.pack('>bBhHlLTiI', -1, 255, -2, 65534, -3, 2^53, 5, -4, 4294967295))",
     "n-1 n255 n-2 n65534 n-3 n9007199254740992 n5 n-4 n4294967295 n39"},
    {"struct.unpack('<bBhHlLTiI', struct.pack('<bBhHlLTiI', -1, 255, -2, 65534, -3, 2^53, 5, -4, 4294967295))",
     "n-1 n255 n-2 n65534 n-3 n9007199254740992 n5 n-4 n4294967295 n39"},
    {"struct.unpack('>L', '\\255\\255\\255\\255\\255\\255\\255\\255')",
     "n1.8446744073709552e+19 n9"},
    {"struct.unpack('>l', '\\128\\0\\0\\0\\0\\0\\0\\0')",
     "n-9.2233720368547758e+18 n9"},
    {"struct.unpack('>I3i3', '\\255\\255\\255\\255\\255\\255')",
     "n16777215 n-1 n7"},
    {"struct.unpack('<i9', '\\255\\255\\255\\255\\255\\255\\255\\255\\255')",
     "n-1 n10"},
    {"struct.unpack('<i9', '\\0\\0\\0\\0\\0\\0\\0\\128\\0')",
     "n-128 n10"},
    {"struct.unpack('<I9', '\\1\\2\\3\\4\\5\\6\\7\\8\\9')",
     "n5.784376957523072e+17 n10"},
    {"struct.unpack('>I9', '\\1\\2\\3\\4\\5\\6\\7\\8\\9')",
     "n1.4496403262845952e+17 n10"},
    {"struct.unpack('<i0', '')",
     "n0 n1"},
    {"struct.unpack('<i16', string.rep('\\255', 16))",
     "n-1 n17"},
    {"struct.unpack('>i16', string.rep('\\255', 8) .. string.rep('\\0', 8))",
     "n0 n17"},
    {"struct.unpack('>i12', string.rep('\\0', 4) .. string.rep('\\255', 8))",
     "n-1 n13"},
    {"struct.unpack('>fd', struct.pack('>fd', 1.5, 0.1))",
     "n1.5 n0.10000000000000001 n13"},
    {"struct.unpack('<fd', struct.pack('<fd', -2.5, 1/0))",
     "n-2.5 ninf n13"},
    {"struct.unpack('>f', '\\127\\192\\0\\0')",
     "nnan n5"},
    {"struct.unpack('bxb', '\\1\\2\\3')",
     "n1 n3 n4"},
    {"struct.unpack('!bi', '\\1\\0\\0\\0\\2\\0\\0\\0')",
     "n1 n2 n9"},
    {"struct.unpack('!bd', '\\1' .. string.rep('\\0', 7) .. struct.pack('d', 3.25))",
     "n1 n3.25 n17"},
    {"struct.unpack('!2bi', '\\1\\0\\2\\0\\0\\0')",
     "n1 n2 n7"},
    {"struct.unpack('s', 'abc\\0def')",
     "'abc' n5"},
    {"struct.unpack('ss', 'abc\\0def\\0')",
     "'abc' 'def' n9"},
    {"struct.unpack('c3', 'abcdef')",
     "'abc' n4"},
    {"struct.unpack('c', 'abcdef')",
     "'a' n2"},
    {"struct.unpack('bc0', '\\3abcdef')",
     "'abc' n5"},
    {"struct.unpack('c1c0', '3abcdef')",
     "'abc' n5"},
    {"struct.unpack('Bc0', '\\0')",
     "'' n2"},
    {"struct.unpack('b', 'abc', 2)",
     "n98 n3"},
    {"struct.unpack('b', 'abc', 3)",
     "n99 n4"},
    {"struct.unpack('b', 'abc', 2.9)",
     "n98 n3"},
    {"struct.unpack('', 'abc', 4)",
     "n4"},
    {"struct.unpack('x', 'abc', 3)",
     "n4"},
    {"struct.unpack(' <>', 'abc')",
     "n1"},
    {"struct.unpack('bc0s', '\\2ab\\0c\\0')",
     "'ab' '' n5"},
    {"pcall(struct.unpack, 'b', 'abc', 4)",
     "false 'bad argument #2 to '?' (data string too short)'"},
    {"pcall(struct.unpack, '', 'abc', 5)",
     "true n5"},
    {"pcall(struct.unpack, 'b', 'abc', 0)",
     "false 'bad argument #3 to '?' (offset must be 1 or greater)'"},
    {"pcall(struct.unpack, 'b', 'abc', -1)",
     "false 'bad argument #2 to '?' (data string too short)'"},
    {"pcall(struct.unpack, 'x', 'abc', -1)",
     "false 'bad argument #2 to '?' (data string too short)'"},
    {"pcall(struct.unpack, 'h', 'abc', -5)",
     "false 'bad argument #2 to '?' (data string too short)'"},
    {"pcall(struct.unpack, 'b', 'abc', 'x')",
     "false 'bad argument #3 to '?' (number expected, got string)'"},
    {"pcall(struct.unpack, 'i', 'abc')",
     "false 'bad argument #2 to '?' (data string too short)'"},
    {"pcall(struct.unpack, 'c4', 'abc')",
     "false 'bad argument #2 to '?' (data string too short)'"},
    {"pcall(struct.unpack, 's', 'abc')",
     "false 'unfinished string in data'"},
    {"pcall(struct.unpack, 'c0', 'abc')",
     "false 'format 'c0' needs a previous size'"},
    {"pcall(struct.unpack, 'bc0', '\\9abc')",
     "false 'bad argument #2 to '?' (data string too short)'"},
    {"pcall(struct.unpack, 'Bc0', '\\1')",
     "false 'bad argument #2 to '?' (data string too short)'"},
    {"pcall(struct.unpack, 'c1c0', 'xabc')",
     "false 'format 'c0' needs a previous size'"},
    {"pcall(struct.unpack, 'z', 'abc')",
     "false 'bad argument #1 to '?' (invalid format option 'z')'"},
    {"pcall(struct.unpack, 'z', '')",
     "false 'bad argument #1 to '?' (invalid format option 'z')'"},
    {"pcall(struct.unpack, 'b', '')",
     "false 'bad argument #2 to '?' (data string too short)'"},
    {"pcall(struct.unpack, '!3', 'abc')",
     "false 'alignment 3 is not a power of 2'"},
    {"pcall(struct.unpack, 'i40', 'abc')",
     "false 'integral size 40 is larger than limit of 32'"},
    {"pcall(struct.unpack, 'b')",
     "false 'bad argument #2 to '?' (string expected, got no value)'"},
    {"pcall(struct.unpack)",
     "false 'bad argument #1 to '?' (string expected, got no value)'"},
    {"pcall(struct.unpack, 'b', {})",
     "false 'bad argument #2 to '?' (string expected, got table)'"},
    {"pcall(function() return select('#', struct.unpack(string.rep('b', 7990), string.rep('\\1', 7990))) end)",
     "true n7991"},
    {"pcall(function() return select('#', struct.unpack(string.rep('b', 7997), string.rep('\\1', 7997))) end)",
     "true n7998"},
    {"pcall(function() return select('#', struct.unpack(string.rep('b', 7998), string.rep('\\1', 7998))) end)",
     "false 'user_script:1: stack overflow (too many results)'"},
    {"pcall(function() return select('#', struct.unpack(string.rep('b', 7999), string.rep('\\1', 7999))) end)",
     "false 'user_script:1: stack overflow (too many results)'"},
    {"pcall(function() return select('#', struct.unpack(string.rep('b', 8000), string.rep('\\1', 8000))) end)",
     "false 'user_script:1: stack overflow (too many results)'"},
    {"pcall(function() return select('#', struct.unpack(string.rep('x', 9000), string.rep('\\1', 9000))) end)",
     "true n1"},
    {"struct.size('bhilfdxc3T')",
     "n39"},
    {"struct.size('!bhilfdxc3T')",
     "n48"},
    {"struct.size('!4bd')",
     "n12"},
    {"struct.size('!bi3i5')",
     "n11"},
    {"struct.size('')",
     "n0"},
    {"struct.size('i16')",
     "n16"},
    {"struct.size('z')",
     "n0"},
    {"struct.size('zq9')",
     "n0"},
    {"struct.size('b<>  ')",
     "n1"},
    {"pcall(struct.size, 's')",
     "false 'bad argument #1 to '?' (option 's' has no fixed size)'"},
    {"pcall(struct.size, 'c0')",
     "false 'bad argument #1 to '?' (option 'c0' has no fixed size)'"},
    {"pcall(struct.size, 'bc0')",
     "false 'bad argument #1 to '?' (option 'c0' has no fixed size)'"},
    {"pcall(struct.size, '?')",
     "false 'bad argument #1 to '?' (invalid format option '?')'"},
    {"pcall(struct.size, '!5')",
     "false 'alignment 5 is not a power of 2'"},
    {"pcall(struct.size, 'i33')",
     "false 'integral size 33 is larger than limit of 32'"},
    {"pcall(struct.size)",
     "false 'bad argument #1 to '?' (string expected, got no value)'"},
    {"type(struct.pack), type(struct.unpack), type(struct.size)",
     "'function' 'function' 'function'"},
    {"pcall(struct.unpack, 'c0', '1')",
     "false 'format 'c0' needs a previous size'"},
    {"pcall(struct.unpack, 'c0', '1x')",
     "false 'format 'c0' needs a previous size'"},
    {"pcall(struct.unpack, 'c0b', '2')",
     "false 'format 'c0' needs a previous size'"},
    {"struct.unpack('bxc0', '\\2\\0ab')",
     "'ab' n5"},
    {"struct.unpack('c1xc0', '2\\0ab')",
     "'ab' n5"},
    {"struct.unpack('bc0', '\\0')",
     "'' n2"},
    {"pcall(struct.unpack, 'i', '12345', 1.5)",
     "true n875770417 n5"},
    {"pcall(struct.unpack, 'c2c0', '-1abc')",
     "false 'bad argument #2 to '?' (data string too short)'"},
    {"pcall(struct.unpack, 'c1c0', '9abc')",
     "false 'bad argument #2 to '?' (data string too short)'"},
    {"struct.unpack('!4bi', 'abcdefgh', 1)",
     "n97 n1751606885 n9"},
    {"pcall(struct.unpack, '!4i', 'abcdefgh', -1)",
     "false 'bad argument #2 to '?' (data string too short)'"},
    {"pcall(struct.unpack, '!4i', 'abcdefgh', -3)",
     "false 'bad argument #2 to '?' (data string too short)'"},
    {"struct.unpack('>i3', '\\255\\0\\1')",
     "n-65535 n4"},
    {"struct.unpack('!8bi3b', '\\1\\0\\0\\0\\2\\0\\0\\3')",
     "n1 n512 n0 n8"},
    {"hex(struct.pack('!8bi3b', 1, 2, 3))",
     "'01000002000003'"},
    {"struct.size('!8bi3b')",
     "n7"},
    {"pcall(function() return select('#', struct.unpack(string.rep('b', 7996), string.rep('\\1', 7996), 1)) end)",
     "true n7997"},
    {"pcall(function() return select('#', struct.unpack(string.rep('b', 7997), string.rep('\\1', 7997), 1)) end)",
     "false 'user_script:1: stack overflow (too many results)'"},
    {"pcall(function() return select('#', struct.unpack(string.rep('b', 7997), string.rep('\\1', 7997), 1, 2, 3)) end)",
     "false 'user_script:1: stack overflow (too many results)'"},
    {"pcall(function() return select('#', struct.unpack(string.rep('b', 7996), string.rep('\\1', 7996), 1, 2, 3)) end)",
     "false 'user_script:1: stack overflow (too many results)'"},
    {"struct.unpack('b', '\\1', 1, 2, 3)",
     "n1 n2"},
    {"struct.unpack('bc0', '\\1a', 1, 2, 3)",
     "'a' n3"},
};
/* clang-format on */

/* A state with Lua's libraries and the two under test, as globals. */
static lua_State *scr_state(void)
{
    lua_State *L = luaL_newstate();
    assert_non_null(L);
    luaL_openlibs(L);
    assert_int_equal(scr_open_cmsgpack(L), 1);
    assert_true(lua_istable(L, -1));
    assert_int_equal(scr_open_struct(L), 1);
    assert_true(lua_istable(L, -1));
    lua_settop(L, 0);
    return L;
}

/*
 * Runs each case and reports every one that differs (not only the first),
 * with what it got; fails when any did. A script error, which no case
 * expects, reads as "-" and its message, as the recorded ones would.
 */
static void scr_run(const struct scr_case *cases, size_t n)
{
    lua_State *L = scr_state();
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(prelude) + strlen(cases[i].lua) + 32;
        char *src = malloc(len);
        snprintf(src, len, "%s return show(%s)", prelude, cases[i].lua);
        const char *got;
        int rc = luaL_loadbuffer(L, src, strlen(src), "@user_script");
        if (rc == 0)
            rc = lua_pcall(L, 0, 1, 0);
        lua_pushstring(L, rc ? "-" : "");
        lua_insert(L, -2);
        lua_concat(L, 2);
        got = lua_tostring(L, -1);
        if (strcmp(got, cases[i].want) != 0) {
            print_error("case %zu: %s\n  want %s\n  got  %s\n", i, cases[i].lua, cases[i].want,
                        got);
            bad++;
        }
        lua_settop(L, 0);
        free(src);
    }
    lua_close(L);
    if (bad)
        fail_msg("%zu of %zu cases differ from Redis 7.0.15", bad, n);
}

#define SCR_RUN(cases) scr_run(cases, sizeof cases / sizeof cases[0])

static void test_scr_libs_cmsgpack_pack(void **state)
{
    (void)state;
    SCR_RUN(mp_pack_cases);
}

static void test_scr_libs_cmsgpack_unpack(void **state)
{
    (void)state;
    SCR_RUN(mp_unpack_cases);
}

static void test_scr_libs_struct(void **state)
{
    (void)state;
    SCR_RUN(st_cases);
}

/* Calls global table tname's function fname with the string s and up to
 * two numbers (a < 0: left out); returns lua_pcall's code. */
static int scr_call(lua_State *L, const char *tname, const char *fname, const char *s, size_t n,
                    const char *fmt, lua_Number a, lua_Number b)
{
    int nargs = 0;
    lua_settop(L, 0);
    lua_getglobal(L, tname);
    lua_getfield(L, -1, fname);
    lua_remove(L, 1);
    if (fmt) {
        lua_pushstring(L, fmt);
        nargs++;
    }
    lua_pushlstring(L, s, n);
    nargs++;
    if (a >= 0) {
        lua_pushnumber(L, a);
        nargs++;
    }
    if (b >= 0) {
        lua_pushnumber(L, b);
        nargs++;
    }
    return lua_pcall(L, nargs, LUA_MULTRET, 0);
}

/*
 * Random bytes, and valid encodings cut short or with bytes changed, to
 * the three unpacks; random formats over random data to struct.unpack and
 * struct.size. Each call must return or raise a Lua error, never anything
 * else; under ASan, never touch a byte outside its input.
 */
static void test_scr_libs_malformed(void **state)
{
    (void)state;
    lua_State *L = scr_state();
    uint64_t r = 0x736372;
    static const char opts[] = "<>!x bBhHlLTiIfdsc0123456789z";
    char buf[64], fmt[16];

    /* A valid encoding of nested values, to cut and mutate. */
    assert_int_equal(luaL_dostring(L, "return cmsgpack.pack({1, 'ab', {x = 1.5, y = {true, "
                                      "false}}, 2^40, -70000, string.rep('s', 40)}, 0.1)"),
                     0);
    size_t vlen;
    const char *v = lua_tolstring(L, -1, &vlen);
    char *valid = malloc(vlen);
    memcpy(valid, v, vlen);
    assert_int_equal(scr_call(L, "cmsgpack", "unpack", valid, vlen, NULL, -1, -1), 0);
    assert_int_equal(lua_gettop(L), 2);

    for (int round = 0; round < 20000; round++) {
        size_t n = (size_t)(t_rnd(&r) % sizeof buf);
        const char *in = buf;
        if (round % 2) {
            for (size_t i = 0; i < n; i++)
                buf[i] = (char)t_rnd(&r);
        } else {
            /* a prefix of the valid encoding, with a byte or two changed */
            char *m = malloc(vlen);
            memcpy(m, valid, vlen);
            n = (size_t)(t_rnd(&r) % (vlen + 1));
            for (int k = (int)(t_rnd(&r) % 3); k > 0 && n > 0; k--)
                m[t_rnd(&r) % n] = (char)t_rnd(&r);
            int rc1 = scr_call(L, "cmsgpack", "unpack", m, n, NULL, -1, -1);
            int rc2 = scr_call(L, "cmsgpack", "unpack_limit", m, n, NULL, (lua_Number)(round % 4),
                               (lua_Number)(t_rnd(&r) % (n + 2)));
            assert_true(rc1 == 0 || rc1 == LUA_ERRRUN);
            assert_true(rc2 == 0 || rc2 == LUA_ERRRUN);
            free(m);
            continue;
        }
        int rc = scr_call(L, "cmsgpack", "unpack", in, n, NULL, -1, -1);
        assert_true(rc == 0 || rc == LUA_ERRRUN);
        rc = scr_call(L, "cmsgpack", "unpack_one", in, n, NULL, (lua_Number)(t_rnd(&r) % (n + 2)),
                      -1);
        assert_true(rc == 0 || rc == LUA_ERRRUN);

        size_t fl = (size_t)(t_rnd(&r) % (sizeof fmt - 1));
        for (size_t i = 0; i < fl; i++)
            fmt[i] = opts[t_rnd(&r) % (sizeof opts - 1)];
        fmt[fl] = '\0';
        /* offsets from -2 (past the end, wrapped) to beyond the data */
        lua_Number off = (lua_Number)(t_rnd(&r) % (n + 3)) - 2;
        lua_settop(L, 0);
        lua_getglobal(L, "struct");
        lua_getfield(L, -1, "unpack");
        lua_remove(L, 1);
        lua_pushstring(L, fmt);
        lua_pushlstring(L, in, n);
        lua_pushnumber(L, off);
        rc = lua_pcall(L, 3, LUA_MULTRET, 0);
        assert_true(rc == 0 || rc == LUA_ERRRUN);
        lua_settop(L, 0);
        lua_getglobal(L, "struct");
        lua_getfield(L, -1, "size");
        lua_remove(L, 1);
        lua_pushstring(L, fmt);
        rc = lua_pcall(L, 1, 1, 0);
        assert_true(rc == 0 || rc == LUA_ERRRUN);
    }
    free(valid);
    lua_close(L);
}

/* What a round trip keeps: every value the encoder gives an exact form. */
static void test_scr_libs_roundtrip(void **state)
{
    (void)state;
    lua_State *L = scr_state();
    static const char script[] =
        "local v = {0, -1, 127, 128, -33, 65536, -2^31, 2^53, -2^63, 0.5, 0.1, 1/0,\n"
        "  '', string.rep('z', 300), string.rep('w', 70000), true, false,\n"
        "  {a = {b = {c = 'd'}}, [5] = 'five'}, {1, {2, {3}}}}\n"
        "local s = cmsgpack.pack(unpack(v))\n"
        "local out = {cmsgpack.unpack(s)}\n"
        "assert(#out == #v)\n"
        "local function same(x, y)\n"
        "  if type(x) ~= 'table' then return x == y end\n"
        "  for k, e in pairs(x) do if not same(e, y[k]) then return false end end\n"
        "  for k in pairs(y) do if x[k] == nil then return false end end\n"
        "  return true end\n"
        "for i = 1, #v do assert(same(v[i], out[i]), 'value ' .. i) end\n"
        "local off, pos, n = 0, 0, 0\n"
        "while off ~= -1 do local x; off, x = cmsgpack.unpack_one(s, pos); pos = off; n = n + 1 "
        "end\n"
        "assert(n == #v)\n"
        "local t = {struct.unpack('>!4bi3hIlLdfsbc0c4', struct.pack('>!4bi3hIlLdfsbc0c4', -5, "
        "-70000,\n"
        "  -300, 4e9, -2^40, 2^40, 0.1, 0.5, 'str', 3, 'abc', 'wxyz'))}\n"
        "assert(t[1] == -5 and t[2] == -70000 and t[3] == -300 and t[4] == 4e9)\n"
        "assert(t[5] == -2^40 and t[6] == 2^40 and t[7] == 0.1 and t[8] == 0.5)\n"
        "assert(t[9] == 'str' and t[10] == 'abc' and t[11] == 'wxyz')\n"
        "assert(t[12] == struct.size('>!4bi3hIlLdf') + 4 + 1 + 3 + 4 + 1)";
    if (luaL_dostring(L, script) != 0)
        fail_msg("%s", lua_tostring(L, -1));
    lua_close(L);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scr_libs_cmsgpack_pack),
        cmocka_unit_test(test_scr_libs_cmsgpack_unpack),
        cmocka_unit_test(test_scr_libs_struct),
        cmocka_unit_test(test_scr_libs_malformed),
        cmocka_unit_test(test_scr_libs_roundtrip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
