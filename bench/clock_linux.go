package main

import (
	"runtime"
	"syscall"
	"time"
	"unsafe"
)

const clockThreadCPUTime = 3 // CLOCK_THREAD_CPUTIME_ID

// clockName says what the timings measure, for the report.
const clockName = "CPU time of the benchmarking thread (CLOCK_THREAD_CPUTIME_ID), so that other processes on the machine do not inflate it"

func init() {
	// Keep the benchmarking goroutine on one OS thread, so that the thread's
	// CPU time is the goroutine's.
	runtime.LockOSThread()
}

// now returns the CPU time the current thread has used so far.
func now() time.Duration {
	var ts syscall.Timespec
	_, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0)
	if errno != 0 {
		panic("clock_gettime(CLOCK_THREAD_CPUTIME_ID): " + errno.Error())
	}
	return time.Duration(ts.Nano())
}
