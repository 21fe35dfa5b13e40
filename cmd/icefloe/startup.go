package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// startLogger is a server role's logger. Until ready is called it logs
// warnings and errors only, so that a start-up that fails prints just the
// one line naming the cause (main prints it); from then on, info too.
func startLogger(stderr io.Writer) (log *zap.Logger, ready func()) {
	level := zap.NewAtomicLevelAt(zapcore.WarnLevel)
	return newLogger(stderr, level), func() { level.SetLevel(zapcore.InfoLevel) }
}

// startupError says what a user can do about the start-up failures that
// come from the machine rather than the config: a port in use or not
// allowed.
func startupError(err error) error {
	var op *net.OpError
	if err == nil || !errors.As(err, &op) || op.Op != "listen" {
		return err
	}
	addr := "the address"
	if op.Addr != nil {
		addr = op.Addr.String()
	}
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return fmt.Errorf("cannot listen on %s: the port is in use (another icefloe running? stop it or give another --listen)", addr)
	case errors.Is(err, syscall.EACCES):
		return fmt.Errorf("cannot listen on %s: permission denied (ports below 1024 need privileges; give another --listen)", addr)
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return fmt.Errorf("cannot listen on %s: no interface of this machine has that address (give another --listen)", addr)
	}
	return err
}
