package main

import "syscall"

// Windows constants that syscall does not name.
const (
	processQueryLimitedInformation               = 0x1000
	stillActive                                  = 259
	errorInvalidParameter          syscall.Errno = 87
)

// processGone reports whether no running process has the ID pid: none can be
// opened, or the one that can has exited.
func processGone(pid int) bool {
	h, err := syscall.OpenProcess(processQueryLimitedInformation, false, uint32(pid))
	if err != nil {
		return err == errorInvalidParameter // no such process; others, such as access denied, mean it runs
	}
	defer syscall.CloseHandle(h)
	var code uint32
	if err := syscall.GetExitCodeProcess(h, &code); err != nil {
		return false
	}
	return code != stillActive
}
