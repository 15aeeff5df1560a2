// SPDX-License-Identifier: GPL-2.0-or-later
//
// shapes - a CPU profile known by construction, in Rust: Square::area
// burns three times what leaf_work does (reached through Circ::area), both
// called through Holder::run from main. Names of every kind Rust mangles:
// a module path, trait impls (<Square as Shape>::area), a generic
// (Holder<T>::run). Prints "ready" once running.
mod geometry {
    pub trait Shape {
        fn area(&self, n: u64) -> u64;
    }
    pub struct Square(pub u64);
    pub struct Circ(pub u64);

    #[inline(never)]
    pub fn leaf_work(seed: u64, n: u64) -> u64 {
        let mut x = seed;
        for i in 0..n {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(i);
            unsafe { std::ptr::write_volatile(&mut x as *mut u64, x) }
        }
        x
    }

    impl Shape for Square {
        #[inline(never)]
        fn area(&self, n: u64) -> u64 {
            let mut x = self.0;
            for i in 0..3 * n {
                x = x.wrapping_mul(2862933555777941757).wrapping_add(i);
                unsafe { std::ptr::write_volatile(&mut x as *mut u64, x) }
            }
            x
        }
    }

    impl Shape for Circ {
        #[inline(never)]
        fn area(&self, n: u64) -> u64 {
            // not a tail call: this frame stays on the stack
            leaf_work(self.0, n) ^ self.0
        }
    }

    pub struct Holder<T>(pub T);

    impl<T: Shape> Holder<T> {
        #[inline(never)]
        pub fn run(&self, n: u64) -> u64 {
            self.0.area(n) ^ n
        }
    }
}

use geometry::*;

static mut N: u64 = 300000;

fn main() {
    println!("ready");
    let sq = Holder(Square(3));
    let ci = Holder(Circ(5));
    let mut acc = 0u64;
    let mut r = 1u64;
    loop {
        // volatile: the loop's work cannot be folded away. Each turn's
        // work varies (0.5 to 1.5 times N, the same for both calls, so
        // the 3:1 holds): a fixed turn near the sampler's period (999 Hz
        // is ~1 ms) would be sampled at the same phase every time, and
        // the shares would drift from 3:1 by several points.
        r = r.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let base = unsafe { std::ptr::read_volatile(&N) };
        let n = base / 2 + (r >> 33) % base;
        acc = acc.wrapping_add(sq.run(n));
        acc = acc.wrapping_add(ci.run(n));
        unsafe { std::ptr::write_volatile(&mut N, base + (acc & 0)) }
    }
}
