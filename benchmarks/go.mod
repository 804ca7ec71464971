module github.com/unherd/backoff/benchmarks

go 1.26.0

replace github.com/unherd/backoff => ../

require (
	github.com/avast/retry-go/v5 v5.1.1
	github.com/aws/aws-sdk-go-v2 v1.48.0
	github.com/cenkalti/backoff/v4 v4.3.0
	github.com/cenkalti/backoff/v5 v5.0.3
	github.com/cenkalti/backoff/v7 v7.0.3
	github.com/cristalhq/hedgedhttp v0.9.2
	github.com/failsafe-go/failsafe-go v0.9.8
	github.com/hashicorp/go-retryablehttp v0.7.8
	github.com/jpillora/backoff v1.1.0
	github.com/sethvargo/go-retry v0.5.0
	github.com/unherd/backoff v0.0.0-00010101000000-000000000000
	k8s.io/apimachinery v0.37.2
)

require (
	github.com/aws/smithy-go v1.28.9 // indirect
	github.com/bits-and-blooms/bitset v1.24.4 // indirect
	github.com/go-logr/logr v1.4.3 // indirect
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	github.com/influxdata/tdigest v0.0.1 // indirect
	k8s.io/klog/v2 v2.140.0 // indirect
	k8s.io/utils v0.0.0-20260626114624-be93311217bd // indirect
)
