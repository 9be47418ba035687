//! Where a stage that can run on either side runs: the CPU or the qualia device (Whisper, the
//! face search). Decided once when a process starts, from an operator's setting and the
//! adapter, so every scan of a process computes the same way and says so.
//!
//! `auto` (the default) takes the device when it is a real GPU and keeps the CPU with a CPU
//! adapter (lavapipe): there a kernel shares the cores the CPU path would use, and the benches
//! measure it slower (Whisper 30 to 49 times, the face search 7 times; `docs/performance.md`).

/// `device` or `cpu` decides; `auto` (or no setting) takes the device unless the adapter is a
/// CPU. `variable` names the setting in the error.
///
/// # Errors
/// Any other setting, named.
pub fn on_device(
    variable: &str,
    setting: Option<&str>,
    adapter: wgpu::DeviceType,
) -> anyhow::Result<bool> {
    match setting.map(str::trim).unwrap_or("auto") {
        "device" => Ok(true),
        "cpu" => Ok(false),
        "auto" | "" => Ok(adapter != wgpu::DeviceType::Cpu),
        other => anyhow::bail!("{variable} must be device, cpu or auto, not {other:?}"),
    }
}

/// [`on_device`] with the setting read from the environment variable `variable`.
///
/// # Errors
/// As [`on_device`].
pub fn from_env(variable: &str, adapter: &wgpu::AdapterInfo) -> anyhow::Result<bool> {
    on_device(
        variable,
        std::env::var(variable).ok().as_deref(),
        adapter.device_type,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_takes_a_gpu_and_keeps_the_cpu_with_a_cpu_adapter() {
        use wgpu::DeviceType::{Cpu, DiscreteGpu, IntegratedGpu};
        let v = "BRAINSCAN_X_ON";
        assert!(on_device(v, None, DiscreteGpu).expect("valid"));
        assert!(on_device(v, Some("auto"), IntegratedGpu).expect("valid"));
        assert!(!on_device(v, None, Cpu).expect("valid"));
        assert!(on_device(v, Some("device"), Cpu).expect("valid"));
        assert!(!on_device(v, Some(" cpu "), DiscreteGpu).expect("valid"));
        let err = on_device(v, Some("gpu"), DiscreteGpu).expect_err("refused");
        assert!(
            err.to_string()
                .contains("BRAINSCAN_X_ON must be device, cpu or auto, not \"gpu\""),
            "{err}"
        );
    }
}
