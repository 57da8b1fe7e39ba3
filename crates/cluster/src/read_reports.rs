//! The coordinator's side of `read_thresholds_enabled`: each replica's
//! answer to a read is a report (the tombstones it met; the bytes it
//! loaded, for this node's own replica) judged against the thresholds,
//! and a refusal past a failure threshold fails the read with the reports
//! so far (`QueryError::ReadAborted`, which the statement names). The
//! decisions and texts are `rocksandra_query::read_thresholds`'.

use std::net::IpAddr;

use rocksandra_query::error::QueryError;
use rocksandra_query::read_thresholds::{
    self, FailureCounts, ReadMet, ReadReports, ReadThresholdSettings, Refusal, ReplicaMet,
    SizeThresholds,
};
use rocksandra_query::tombstones::{TombstoneSettings, TombstoneThresholds};
use rocksandra_storage::Partition;

use crate::message::RemoteError;

/// What one read's replicas reported; nothing when the flag is off.
#[derive(Default)]
pub(crate) struct ReportBook {
    judge: Option<(TombstoneThresholds, SizeThresholds)>,
    reports: ReadReports,
}

impl ReportBook {
    pub(crate) fn new(read: &ReadThresholdSettings, tombstones: &TombstoneSettings) -> Self {
        ReportBook {
            judge: read
                .enabled()
                .map(|read| (tombstones.get(), read.local_size().unwrap_or_default())),
            reports: ReadReports::default(),
        }
    }

    pub(crate) fn answered(&mut self, node: IpAddr, tombstones: u64, bytes: u64) {
        if let Some((tombstone_thresholds, local_size)) = self.judge {
            let met = ReplicaMet { tombstones, bytes };
            self.reports
                .answered(node, met, tombstone_thresholds, local_size);
        }
    }

    /// This node's own read of `partitions`, which met `tombstones`: its
    /// report, or the read's failure when it is refused past a failure
    /// threshold (`ReadReports::own_read`).
    pub(crate) fn own_read(
        &mut self,
        node: IpAddr,
        (partitions, tombstones): (&[Partition], u64),
        counts: FailureCounts,
    ) -> Result<(), QueryError> {
        let Some((tombstone_thresholds, local_size)) = self.judge else {
            return Ok(());
        };
        let bytes = match local_size.warn.or(local_size.fail) {
            Some(_) => partitions
                .iter()
                .map(read_thresholds::partition_bytes)
                .sum(),
            None => 0,
        };
        let met = ReplicaMet { tombstones, bytes };
        if self
            .reports
            .own_read(node, met, tombstone_thresholds, local_size)
        {
            return Err(self.aborted(counts));
        }
        Ok(())
    }

    /// A replica's refusal: Some(the read's failure) when the flag is on.
    pub(crate) fn refused(
        &mut self,
        node: IpAddr,
        error: &RemoteError,
        counts: FailureCounts,
    ) -> Option<QueryError> {
        self.judge?;
        match error {
            RemoteError::TooManyTombstones { tombstones } => {
                Some(self.abort(node, Refusal::Tombstones(*tombstones), counts))
            }
            RemoteError::ReadTooLarge { bytes } => {
                Some(self.abort(node, Refusal::Size(*bytes), counts))
            }
            _ => None,
        }
    }

    fn abort(&mut self, node: IpAddr, refusal: Refusal, counts: FailureCounts) -> QueryError {
        self.reports.refused(node, refusal);
        self.aborted(counts)
    }

    /// The read's failure once a replica refused it (the statement names
    /// the query: `read_thresholds::named`).
    fn aborted(&mut self, counts: FailureCounts) -> QueryError {
        let reports = std::mem::take(&mut self.reports);
        let failure = reports.abort(counts);
        failure.unwrap_or_else(|| QueryError::Server("a refused read without a refusal".into()))
    }

    /// What the read met: this node's own tombstones and the reports.
    pub(crate) fn met(self, own_tombstones: u64) -> ReadMet {
        ReadMet {
            tombstones: own_tombstones,
            reports: self.reports,
        }
    }
}
