//! Prometheus (OpenMetrics) text of a status snapshot through prometheus-client: a
//! [`Collector`] writes the families a render function gives it, in that order, and the crate
//! does the format (label escaping, `_total` on counter samples, the closing `# EOF`).
//!
//! Counters are named without `_total` here; each of their samples carries it.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{
    DescriptorEncoder, EncodeCounterValue, EncodeGaugeValue, EncodeMetric, MetricEncoder,
};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use std::fmt;

/// The labels of one series, in order.
pub type Labels = Vec<(&'static str, String)>;

/// The HTTP content type of the text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Where a render function writes its metric families.
pub struct Families<'a>(DescriptorEncoder<'a>);

impl Families<'_> {
    /// A gauge family: one sample per (labels, value).
    pub fn gauge<V: EncodeGaugeValue>(
        &mut self,
        name: &str,
        help: &str,
        series: impl IntoIterator<Item = (Labels, V)>,
    ) -> fmt::Result {
        let mut family = self.0.encode_descriptor(name, help, None, MetricType::Gauge)?;
        for (labels, v) in series {
            sample(&mut family, &labels, ConstGauge::new(v))?;
        }
        Ok(())
    }

    /// A counter family; `name` without `_total`.
    pub fn counter<V: EncodeCounterValue>(
        &mut self,
        name: &str,
        help: &str,
        series: impl IntoIterator<Item = (Labels, V)>,
    ) -> fmt::Result {
        let mut family = self.0.encode_descriptor(name, help, None, MetricType::Counter)?;
        for (labels, v) in series {
            sample(&mut family, &labels, ConstCounter::new(v))?;
        }
        Ok(())
    }

    /// A gauge with one unlabelled sample.
    pub fn gauge1<V: EncodeGaugeValue>(&mut self, name: &str, help: &str, v: V) -> fmt::Result {
        ConstGauge::new(v).encode(self.0.encode_descriptor(name, help, None, MetricType::Gauge)?)
    }

    /// A counter with one unlabelled sample; `name` without `_total`.
    pub fn counter1<V: EncodeCounterValue>(&mut self, name: &str, help: &str, v: V) -> fmt::Result {
        ConstCounter::new(v).encode(self.0.encode_descriptor(name, help, None, MetricType::Counter)?)
    }
}

/// One labelled sample of `family`.
fn sample(family: &mut MetricEncoder<'_>, labels: &Labels, metric: impl EncodeMetric) -> fmt::Result {
    metric.encode(family.encode_family(labels)?)
}

#[derive(Debug)]
struct Snapshot<T> {
    doc: T,
    render: fn(&T, &mut Families<'_>) -> fmt::Result,
}

impl<T: fmt::Debug + Send + Sync + 'static> Collector for Snapshot<T> {
    fn encode(&self, encoder: DescriptorEncoder) -> fmt::Result {
        (self.render)(&self.doc, &mut Families(encoder))
    }
}

/// The text of `doc` as `render` describes it.
pub fn render<T: fmt::Debug + Send + Sync + 'static>(
    doc: T,
    render: fn(&T, &mut Families<'_>) -> fmt::Result,
) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Snapshot { doc, render }));
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut out, &registry);
    out
}
