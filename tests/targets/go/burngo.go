// SPDX-License-Identifier: GPL-2.0-or-later

// burngo - a CPU profile known by construction, in Go: hot burns three
// times what sibling does, both called from main. Two more
// goroutines allocate and pass buffers, so the runtime's garbage collector,
// scheduler and stack switches (mcall, systemstack) show up in samples and
// thread dumps. Built by golang-go with its default, compressed DWARF.
// Prints "ready" once running.
package main

import (
	"fmt"
	"os"
	"time"
)

var sink, ticks uint64

//go:noinline
func tick() { ticks++ }

// The loops burn in hot's and sibling's own bodies; the calls to tick
// give them a frame of their own, so perf's frame-pointer unwinding
// finds their callers too.

//go:noinline
func hot() {
	x := sink
	for i := 0; i < 3000000; i++ {
		x = x*6364136223846793005 + uint64(i)
		if i&0xfffff == 0 {
			tick()
		}
	}
	sink = x
}

//go:noinline
func sibling() {
	x := sink
	for i := 0; i < 1000000; i++ {
		x = x*2862933555777941757 + uint64(i)
		if i&0xfffff == 0 {
			tick()
		}
	}
	sink = x
}

func garbage(ch chan []byte) {
	for {
		b := make([]byte, 1<<16)
		select {
		case ch <- b:
		default:
		}
		time.Sleep(time.Millisecond)
	}
}

func main() {
	ch := make(chan []byte)
	go garbage(ch)
	go func() {
		for {
			<-ch
			time.Sleep(3 * time.Millisecond)
		}
	}()
	fmt.Println("ready")
	os.Stdout.Sync()
	for {
		hot()
		sibling()
	}
}
