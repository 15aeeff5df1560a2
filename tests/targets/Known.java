// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Known.java - a JVM with known CPU shares (tests/integration/test_java.py),
 * run with no flag. The main thread calls heavy() and light() in turn;
 * heavy() does three times the work of light(), each in a loop of its own
 * (no shared callee for the JIT to inline into both), and the thread's CPU
 * time spent in each is counted with ThreadMXBean and written, every
 * 100 ms, to the file named by the first argument ("HEAVY LIGHT\n",
 * seconds). main() stays interpreted: its loop turns too slowly to be
 * compiled, so heavy() and light() are compiled on their own, never
 * inlined. A thread "known-sleeper" sleeps in parkedHere().
 *
 * Then main() calls outer(), whose loop calls inner(), small enough for
 * the JIT to inline into outer(); inner() calls apply() of three classes
 * in turn through one interface call site, too many receivers for the JIT
 * to inline that call: the compiled outer() has inner() inlined, at the
 * call to apply(). Each apply() is written on one line, so that every
 * bytecode of it has that line, with a loop of a count the JIT does not
 * know, in which compiled code keeps a safepoint poll (and its debug
 * information). Their time is counted in neither number.
 */
import java.io.FileWriter;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

public class Known {
    static volatile long sink;

    static long heavy() {
        long x = 1;
        for (long i = 0; i < 3_000_000L; i++)   // line: heavy-loop
            x = x * 6364136223846793005L + i;   // line: heavy
        return x;
    }

    static long light() {
        long x = 1;
        for (long i = 0; i < 1_000_000L; i++)
            x = x * 6364136223846793005L + i;   // line: light
        return x;
    }

    interface Op {
        long apply(long x, long i);
    }

    static final class Mul implements Op {
        public long apply(long x, long i) { for (long k = 0; k < reps; k++) x = x * 6364136223846793005L + i + k; return x; }   // line: apply-mul
    }

    static final class Xor implements Op {
        public long apply(long x, long i) { for (long k = 0; k < reps; k++) x = (x ^ (x >>> 7)) * 6364136223846793005L + k; return x; }   // line: apply-xor
    }

    static final class Add implements Op {
        public long apply(long x, long i) { for (long k = 0; k < reps; k++) x = (x + i) * 3202034522624059733L + k; return x; }   // line: apply-add
    }

    static final Op[] OPS = { new Mul(), new Xor(), new Add() };
    static long reps = 200;   // not final: a loop the JIT keeps a safepoint in

    static long inner(Op op, long x, long i) {
        return op.apply(x, i) + 1;   // line: inner
    }

    static long outer() {
        long x = 1;
        for (long i = 0; i < 3_000L; i++)
            x = inner(OPS[(int) (i % 3)], x, i);   // line: call-inner
        return x;
    }

    static void parkedHere() throws InterruptedException {
        for (;;)
            Thread.sleep(1_000_000);   // line: sleep
    }

    static void report(String path, long heavyNs, long lightNs)
            throws IOException {
        Path tmp = Path.of(path + ".tmp");
        try (FileWriter w = new FileWriter(tmp.toFile())) {
            w.write(heavyNs / 1e9 + " " + lightNs / 1e9 + "\n");
        }
        Files.move(tmp, Path.of(path), StandardCopyOption.ATOMIC_MOVE);
    }

    public static void main(String[] args) throws Exception {
        Thread sleeper = new Thread(() -> {
            try {
                parkedHere();
            } catch (InterruptedException e) {
            }
        }, "known-sleeper");
        sleeper.setDaemon(true);
        sleeper.start();
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long heavyNs = 0, lightNs = 0, last = System.nanoTime();
        System.out.println("ready");
        System.out.flush();
        for (;;) {
            long t0 = mx.getCurrentThreadCpuTime();
            sink += heavy();   // line: call-heavy
            long t1 = mx.getCurrentThreadCpuTime();
            sink += light();   // line: call-light
            long t2 = mx.getCurrentThreadCpuTime();
            sink += outer();   // line: call-outer
            heavyNs += t1 - t0;
            lightNs += t2 - t1;
            if (args.length > 0 && System.nanoTime() - last > 100_000_000L) {
                report(args[0], heavyNs, lightNs);
                last = System.nanoTime();
            }
        }
    }
}
