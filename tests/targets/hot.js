// SPDX-License-Identifier: GPL-2.0-or-later
//
// hot.js - a CPU profile known by construction, in JavaScript: hotLoop
// burns three times what coldLoop does; V8 compiles both to machine code
// that lives in no file. Run with node --perf-basic-prof, which names that
// code in /tmp/perf-PID.map. Prints "ready" once running.
'use strict';

function hotLoop(n) {
  let x = 0;
  for (let i = 0; i < n; i++) x = (x * 31 + i) | 0;
  return x;
}

function coldLoop(n) {
  let x = 1;
  for (let i = 0; i < n; i++) x = (x * 17 + i) | 0;
  return x;
}

let sink = 0;
process.stdout.write('ready\n');
for (;;) {
  sink ^= hotLoop(3000000);
  sink ^= coldLoop(1000000);
}
