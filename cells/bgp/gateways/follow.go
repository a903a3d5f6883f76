package gateways

import (
	"context"
	"log/slog"
	"time"

	"github.com/cilium/hive/cell"
)

const retryDelay = time.Second

// keepFollowing runs follow (a netlink subscription and the listings it
// triggers) until the agent stops, subscribing again a moment after it
// fails; what names the job in health and logs.
func keepFollowing(ctx context.Context, health cell.Health, log *slog.Logger, what string, follow func(context.Context, cell.Health) error) error {
	for ctx.Err() == nil {
		err := follow(ctx, health)
		if ctx.Err() != nil {
			return nil
		}
		health.Degraded(what, err)
		log.Warn("Subscribing again after "+what+" failed", "error", err)
		select {
		case <-ctx.Done():
		case <-time.After(retryDelay):
		}
	}
	return nil
}

// subscriptionErrors is a netlink subscription's error callback and the
// channel it reports the first error on.
func subscriptionErrors() (func(error), <-chan error) {
	failed := make(chan error, 1)
	return func(err error) {
		select {
		case failed <- err:
		default:
		}
	}, failed
}
