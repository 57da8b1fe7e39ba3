// The one rate-limiter call RocksDB's C API lacks: changing the rate of a
// limiter the database already uses (`nodetool setcompactionthroughput`).
// Compiled by build.rs against the headers of the RocksDB this crate links.
#include <cstdint>
#include <memory>

#include "rocksdb/rate_limiter.h"

// The C API's handle, declared exactly as RocksDB's c.cc declares it.
struct rocksdb_ratelimiter_t {
  std::shared_ptr<rocksdb::RateLimiter> rep;
};

extern "C" {

void rocksandra_ratelimiter_set_bytes_per_second(rocksdb_ratelimiter_t* limiter,
                                                 int64_t bytes_per_second) {
  limiter->rep->SetBytesPerSecond(bytes_per_second);
}

int64_t rocksandra_ratelimiter_bytes_per_second(const rocksdb_ratelimiter_t* limiter) {
  return limiter->rep->GetBytesPerSecond();
}

int64_t rocksandra_ratelimiter_total_bytes_through(const rocksdb_ratelimiter_t* limiter) {
  return limiter->rep->GetTotalBytesThrough();
}

}  // extern "C"
