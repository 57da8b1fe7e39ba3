module rocksandra/tests/drivers/go

go 1.23

require (
	github.com/apache/cassandra-gocql-driver/v2 v2.1.2
	gopkg.in/inf.v0 v0.9.1
)
