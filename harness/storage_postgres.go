package harness

import (
	"context"
	"fmt"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/fenced"
	"github.com/fencecheck/fencecheck/backends/postgres"
)

func init() {
	registerStorage(StorageKind{
		Name: "postgres",
		Start: func(ctx context.Context, s *dockerSystem) (string, string, error) {
			if _, err := fenced.ParseMode(s.cfg.Fencing); err != nil {
				return "", "", err
			}
			return postgres.StartStorage(ctx, s.cluster, s.cfg.LeaseTTL)
		},
		Open: func(_ context.Context, spec backends.ClientSpec) (fenced.Storage, error) {
			if spec.StorageURL == "" || spec.Secret == "" {
				return nil, fmt.Errorf("storage postgres needs its URL and password")
			}
			mode, err := fenced.ParseMode(spec.Fencing)
			if err != nil {
				return nil, err
			}
			return postgres.NewStorage(spec.StorageURL, spec.Secret, mode)
		},
	})
}
