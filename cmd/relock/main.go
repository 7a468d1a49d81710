package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/relock-go/relock/cmd/relock/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	app := &cli.App{
		Stdin:       os.Stdin,
		Stdout:      os.Stdout,
		Stderr:      os.Stderr,
		Getenv:      os.Getenv,
		Interactive: isTerminal(os.Stdin),
	}
	code := app.Run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}
