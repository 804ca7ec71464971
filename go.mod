module github.com/unherd/backoff

go 1.25
