//! Draws the cortical surface offscreen with wgpu, on the adapter qualia runs on (a real GPU,
//! or lavapipe on a machine without one): four orthographic views, left and right
//! hemispheres, lateral and medial, with depth testing and diffuse shading.
//!
//! Why the mesh is drawn once per scan, not once per frame: the views never move, only the
//! colours do, and every vertex of a network takes that network's value. So one draw records,
//! for every pixel, which network's surface is in front and how it is lit ([`Panel`]); each
//! frame is then that panel coloured by the second's seven values (`video.rs`), with no
//! per-frame readback from the GPU. On lavapipe, drawing 260k triangles for each of 1,800
//! frames of a 3-minute clip would cost far more than the 12 s the render may take.

use anyhow::{Context, ensure};
use wgpu::util::DeviceExt as _;

use super::surface::{Cortex, Hemisphere};
use crate::inference::gpu::GpuContext;

/// One view's size, pixels. The panel is 2 x 2 views.
pub const VIEW_W: u32 = 320;
pub const VIEW_H: u32 = 240;
pub const PANEL_W: u32 = VIEW_W * 2;
pub const PANEL_H: u32 = VIEW_H * 2;

/// A pixel with no surface in front of it.
pub const BACKGROUND: u8 = 255;

/// The drawn panel: per pixel, the network in front (0..=6, [`super::surface::NO_NETWORK`],
/// or [`BACKGROUND`]) and its diffuse shade (0..=255).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Panel {
    pub network: Vec<u8>,
    pub shade: Vec<u8>,
}

/// Which view goes where: (hemisphere is left, lateral, column, row).
const VIEWS: [(bool, bool, u32, u32); 4] = [
    (true, true, 0, 0),
    (false, true, 1, 0),
    (true, false, 0, 1),
    (false, false, 1, 1),
];

const SHADER: &str = r"
struct Uniforms { m: mat4x4<f32>, light: vec4<f32> };
@group(0) @binding(0) var<uniform> u: Uniforms;

struct Out {
    @builtin(position) pos: vec4<f32>,
    @location(0) normal: vec3<f32>,
    @location(1) @interpolate(flat) net: u32,
};

@vertex
fn vs(@location(0) p: vec3<f32>, @location(1) n: vec3<f32>, @location(2) net: u32) -> Out {
    var o: Out;
    o.pos = u.m * vec4<f32>(p, 1.0);
    o.normal = n;
    o.net = net;
    return o;
}

@fragment
fn fs(i: Out) -> @location(0) vec4<f32> {
    // Two-sided diffuse light from the viewer's side and above, with an ambient floor so
    // that sulci stay readable.
    let d = abs(dot(normalize(i.normal), u.light.xyz));
    let shade = 0.35 + 0.65 * d;
    return vec4<f32>(f32(i.net) / 255.0, shade, 0.0, 1.0);
}
";

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Vertex {
    position: [f32; 3],
    normal: [f32; 3],
    network: u32,
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Uniforms {
    /// Column-major, as WGSL reads a `mat4x4`.
    m: [[f32; 4]; 4],
    light: [f32; 4],
}

/// The orthographic projection of one view. Screen x is the anterior-posterior axis (the
/// front of the brain on the left in left-hemisphere lateral and right-hemisphere medial
/// views, as neuroimaging figures show them), screen y is superior, and depth runs along x
/// away from the camera, which sits outside the hemisphere (lateral) or at the midline
/// (medial). `scale` is pixels per mm, shared by all views so the hemispheres match.
fn projection(h: &Hemisphere, left: bool, lateral: bool, centre: [f32; 2], scale: f32) -> Uniforms {
    // Camera on the -x side for a left lateral or a right medial view.
    let camera_negative_x = left == lateral;
    let sx = if camera_negative_x { -1.0 } else { 1.0 }; // screen x = sx * y
    let sd = if camera_negative_x { 1.0 } else { -1.0 }; // depth = sd * x
    let (mut dmin, mut dmax) = (f32::MAX, f32::MIN);
    for p in &h.positions {
        dmin = dmin.min(sd * p[0]);
        dmax = dmax.max(sd * p[0]);
    }
    let kd = 1.0 / (dmax - dmin).max(1e-3);
    let kx = scale * 2.0 / VIEW_W as f32;
    let ky = scale * 2.0 / VIEW_H as f32;
    let rows = [
        [0.0, sx * kx, 0.0, -sx * centre[0] * kx],
        [0.0, 0.0, ky, -centre[1] * ky],
        [sd * kd, 0.0, 0.0, -dmin * kd],
        [0.0, 0.0, 0.0, 1.0],
    ];
    let m = std::array::from_fn(|c| std::array::from_fn(|r| rows[r][c]));
    let toward_camera = -sd;
    let light = [toward_camera, 0.0, 0.5, 0.0];
    let len = (light[0] * light[0] + light[2] * light[2]).sqrt();
    Uniforms {
        m,
        light: light.map(|v| v / len),
    }
}

/// Draws the four views once.
///
/// # Errors
/// A device error (the adapter's message) or a failed readback.
pub fn draw(gpu: &GpuContext, cortex: &Cortex) -> anyhow::Result<Panel> {
    let device = gpu.device();
    let queue = gpu.queue();
    // One scale for every view: the larger hemisphere's extent fills 94 % of its view.
    let (mut lo, mut hi) = ([f32::MAX; 2], [f32::MIN; 2]);
    for h in [&cortex.left, &cortex.right] {
        for p in &h.positions {
            lo = [lo[0].min(p[1]), lo[1].min(p[2])];
            hi = [hi[0].max(p[1]), hi[1].max(p[2])];
        }
    }
    let centre = [(lo[0] + hi[0]) / 2.0, (lo[1] + hi[1]) / 2.0];
    let scale = (0.94 * VIEW_W as f32 / (hi[0] - lo[0]).max(1.0))
        .min(0.94 * VIEW_H as f32 / (hi[1] - lo[1]).max(1.0));

    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("cortex"),
        source: wgpu::ShaderSource::Wgsl(SHADER.into()),
    });
    let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("cortex"),
        entries: &[wgpu::BindGroupLayoutEntry {
            binding: 0,
            visibility: wgpu::ShaderStages::VERTEX_FRAGMENT,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Uniform,
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        }],
    });
    let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some("cortex"),
        bind_group_layouts: &[Some(&layout)],
        immediate_size: 0,
    });
    let attributes = wgpu::vertex_attr_array![0 => Float32x3, 1 => Float32x3, 2 => Uint32];
    let target_format = wgpu::TextureFormat::Rgba8Unorm;
    let pipeline = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
        label: Some("cortex"),
        layout: Some(&pipeline_layout),
        vertex: wgpu::VertexState {
            module: &module,
            entry_point: Some("vs"),
            compilation_options: wgpu::PipelineCompilationOptions::default(),
            buffers: &[Some(wgpu::VertexBufferLayout {
                array_stride: std::mem::size_of::<Vertex>() as u64,
                step_mode: wgpu::VertexStepMode::Vertex,
                attributes: &attributes,
            })],
        },
        primitive: wgpu::PrimitiveState {
            topology: wgpu::PrimitiveTopology::TriangleList,
            cull_mode: None,
            ..Default::default()
        },
        depth_stencil: Some(wgpu::DepthStencilState {
            format: wgpu::TextureFormat::Depth32Float,
            depth_write_enabled: Some(true),
            depth_compare: Some(wgpu::CompareFunction::Less),
            stencil: wgpu::StencilState::default(),
            bias: wgpu::DepthBiasState::default(),
        }),
        multisample: wgpu::MultisampleState::default(),
        fragment: Some(wgpu::FragmentState {
            module: &module,
            entry_point: Some("fs"),
            compilation_options: wgpu::PipelineCompilationOptions::default(),
            targets: &[Some(wgpu::ColorTargetState {
                format: target_format,
                blend: None,
                write_mask: wgpu::ColorWrites::ALL,
            })],
        }),
        multiview_mask: None,
        cache: None,
    });

    let size = wgpu::Extent3d {
        width: PANEL_W,
        height: PANEL_H,
        depth_or_array_layers: 1,
    };
    let texture = |format, usage| {
        device.create_texture(&wgpu::TextureDescriptor {
            label: Some("cortex"),
            size,
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format,
            usage,
            view_formats: &[],
        })
    };
    let colour = texture(
        target_format,
        wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
    );
    let depth = texture(
        wgpu::TextureFormat::Depth32Float,
        wgpu::TextureUsages::RENDER_ATTACHMENT,
    );
    let colour_view = colour.create_view(&wgpu::TextureViewDescriptor::default());
    let depth_view = depth.create_view(&wgpu::TextureViewDescriptor::default());

    struct Draw {
        vertices: wgpu::Buffer,
        indices: wgpu::Buffer,
        count: u32,
        bind: wgpu::BindGroup,
        viewport: (f32, f32),
    }
    let mut draws = Vec::new();
    for (left, lateral, col, row) in VIEWS {
        let h = if left { &cortex.left } else { &cortex.right };
        let vertices: Vec<Vertex> = h
            .positions
            .iter()
            .zip(&h.normals)
            .zip(&h.network)
            .map(|((p, n), k)| Vertex {
                position: *p,
                normal: *n,
                network: u32::from(*k),
            })
            .collect();
        let uniforms = projection(h, left, lateral, centre, scale);
        let uniform = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("cortex view"),
            contents: bytemuck::bytes_of(&uniforms),
            usage: wgpu::BufferUsages::UNIFORM,
        });
        draws.push(Draw {
            vertices: device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("cortex vertices"),
                contents: bytemuck::cast_slice(&vertices),
                usage: wgpu::BufferUsages::VERTEX,
            }),
            indices: device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("cortex triangles"),
                contents: bytemuck::cast_slice(&h.triangles),
                usage: wgpu::BufferUsages::INDEX,
            }),
            count: (h.triangles.len() * 3) as u32,
            bind: device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("cortex view"),
                layout: &layout,
                entries: &[wgpu::BindGroupEntry {
                    binding: 0,
                    resource: uniform.as_entire_binding(),
                }],
            }),
            viewport: ((col * VIEW_W) as f32, (row * VIEW_H) as f32),
        });
    }

    let bytes_per_row = PANEL_W * 4; // 2560: a multiple of wgpu's 256-byte row alignment
    let readback = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("cortex readback"),
        size: u64::from(bytes_per_row * PANEL_H),
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut enc = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
        label: Some("cortex"),
    });
    {
        let mut pass = enc.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("cortex"),
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view: &colour_view,
                depth_slice: None,
                resolve_target: None,
                ops: wgpu::Operations {
                    // Red 1.0 reads back as 255: the background marker.
                    load: wgpu::LoadOp::Clear(wgpu::Color {
                        r: 1.0,
                        g: 0.0,
                        b: 0.0,
                        a: 1.0,
                    }),
                    store: wgpu::StoreOp::Store,
                },
            })],
            depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                view: &depth_view,
                depth_ops: Some(wgpu::Operations {
                    load: wgpu::LoadOp::Clear(1.0),
                    store: wgpu::StoreOp::Discard,
                }),
                stencil_ops: None,
            }),
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
        pass.set_pipeline(&pipeline);
        for d in &draws {
            pass.set_viewport(
                d.viewport.0,
                d.viewport.1,
                VIEW_W as f32,
                VIEW_H as f32,
                0.0,
                1.0,
            );
            pass.set_bind_group(0, &d.bind, &[]);
            pass.set_vertex_buffer(0, d.vertices.slice(..));
            pass.set_index_buffer(d.indices.slice(..), wgpu::IndexFormat::Uint32);
            pass.draw_indexed(0..d.count, 0, 0..1);
        }
    }
    enc.copy_texture_to_buffer(
        wgpu::TexelCopyTextureInfo {
            texture: &colour,
            mip_level: 0,
            origin: wgpu::Origin3d::ZERO,
            aspect: wgpu::TextureAspect::All,
        },
        wgpu::TexelCopyBufferInfo {
            buffer: &readback,
            layout: wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(bytes_per_row),
                rows_per_image: Some(PANEL_H),
            },
        },
        size,
    );
    queue.submit([enc.finish()]);
    readback.slice(..).map_async(wgpu::MapMode::Read, |_| {});
    device
        .poll(wgpu::PollType::wait_indefinitely())
        .context("waiting for the cortex draw")?;
    gpu.check_errors().context("drawing the cortex")?;
    let rgba = readback
        .slice(..)
        .get_mapped_range()
        .map_err(|e| anyhow::anyhow!("reading the cortex draw back: {e}"))?
        .to_vec();
    readback.unmap();
    ensure!(
        rgba.len() == (PANEL_W * PANEL_H * 4) as usize,
        "the readback has {} bytes",
        rgba.len()
    );
    Ok(Panel {
        network: rgba.chunks_exact(4).map(|p| p[0]).collect(),
        shade: rgba.chunks_exact(4).map(|p| p[1]).collect(),
    })
}
