package main

import (
	"context"
	"io"

	"napilab/kernels"
	"napilab/runner/campaign"
)

// newGuests returns the guests a command boots, built in the --cache with
// lab's kernel build and its progress lines on log.
func newGuests(g *globalOptions, makeJobs int, log io.Writer) *campaign.Guests {
	return campaign.NewGuests(g.cache(), makeJobs, log, func(ctx context.Context, kpath, commit string, fl kernels.Flavour, opts kernels.Options, log io.Writer) (*kernels.Artifact, *kernels.Spec, error) {
		return buildPinned(ctx, g, kpath, commit, fl, opts, progressWriter(log, false))
	})
}
