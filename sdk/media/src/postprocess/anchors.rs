//! SSD anchor generation as MediaPipe's `SsdAnchorsCalculator` does it, with the options of
//! the BlazeFace short- and full-range graphs.

/// One anchor: centre and size in normalized input coordinates ([0, 1]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Anchor {
    /// Centre x.
    pub x_center: f32,
    /// Centre y.
    pub y_center: f32,
    /// Width (1 with a fixed anchor size).
    pub w: f32,
    /// Height (1 with a fixed anchor size).
    pub h: f32,
}

/// The subset of MediaPipe's `SsdAnchorsCalculatorOptions` that BlazeFace uses.
#[derive(Debug, Clone, PartialEq)]
pub struct AnchorOptions {
    /// Model input width in pixels.
    pub input_width: usize,
    /// Model input height in pixels.
    pub input_height: usize,
    /// Smallest anchor scale.
    pub min_scale: f32,
    /// Largest anchor scale.
    pub max_scale: f32,
    /// Offset of the anchor centre within its cell, x.
    pub anchor_offset_x: f32,
    /// Offset of the anchor centre within its cell, y.
    pub anchor_offset_y: f32,
    /// Feature-map stride of each layer; layers with equal strides share one grid.
    pub strides: Vec<usize>,
    /// Aspect ratios of each layer's anchors.
    pub aspect_ratios: Vec<f32>,
    /// Aspect ratio of the extra interpolated-scale anchor (none when ≤ 0).
    pub interpolated_scale_aspect_ratio: f32,
    /// Every anchor has width and height 1 (the regressor carries the size).
    pub fixed_anchor_size: bool,
}

impl AnchorOptions {
    /// `face_detection_short_range.pbtxt`: 128x128, 896 anchors.
    pub fn blazeface_short() -> AnchorOptions {
        AnchorOptions {
            input_width: 128,
            input_height: 128,
            min_scale: 0.1484375,
            max_scale: 0.75,
            anchor_offset_x: 0.5,
            anchor_offset_y: 0.5,
            strides: vec![8, 16, 16, 16],
            aspect_ratios: vec![1.0],
            interpolated_scale_aspect_ratio: 1.0,
            fixed_anchor_size: true,
        }
    }

    /// `face_detection_full_range.pbtxt`: 192x192, 2304 anchors.
    pub fn blazeface_full() -> AnchorOptions {
        AnchorOptions {
            input_width: 192,
            input_height: 192,
            min_scale: 0.1484375,
            max_scale: 0.75,
            anchor_offset_x: 0.5,
            anchor_offset_y: 0.5,
            strides: vec![4],
            aspect_ratios: vec![1.0],
            interpolated_scale_aspect_ratio: 0.0,
            fixed_anchor_size: true,
        }
    }
}

fn calculate_scale(min_scale: f32, max_scale: f32, stride_index: usize, num_strides: usize) -> f32 {
    if num_strides == 1 {
        (min_scale + max_scale) * 0.5
    } else {
        min_scale + (max_scale - min_scale) * stride_index as f32 / (num_strides as f32 - 1.0)
    }
}

/// Generates the anchors in the order the model's outputs use (layer, row, column, anchor).
/// A zero stride yields no anchors for that layer rather than a division by zero.
pub fn generate_anchors(o: &AnchorOptions) -> Vec<Anchor> {
    let mut anchors = Vec::new();
    let n = o.strides.len();
    let mut layer = 0;
    while layer < n {
        let mut heights = Vec::new();
        let mut widths = Vec::new();
        let mut last = layer;
        while last < n && o.strides[last] == o.strides[layer] {
            let scale = calculate_scale(o.min_scale, o.max_scale, last, n);
            let mut ratios_scales: Vec<(f32, f32)> = o.aspect_ratios.iter().map(|&r| (r, scale)).collect();
            if o.interpolated_scale_aspect_ratio > 0.0 {
                let next = if last == n - 1 { 1.0 } else { calculate_scale(o.min_scale, o.max_scale, last + 1, n) };
                ratios_scales.push((o.interpolated_scale_aspect_ratio, (scale * next).sqrt()));
            }
            for (r, s) in ratios_scales {
                let sq = r.sqrt();
                heights.push(s / sq);
                widths.push(s * sq);
            }
            last += 1;
        }
        let stride = o.strides[layer];
        if stride > 0 {
            let fh = o.input_height.div_ceil(stride);
            let fw = o.input_width.div_ceil(stride);
            for y in 0..fh {
                for x in 0..fw {
                    for (&h, &w) in heights.iter().zip(&widths) {
                        let (w, h) = if o.fixed_anchor_size { (1.0, 1.0) } else { (w, h) };
                        anchors.push(Anchor {
                            x_center: (x as f32 + o.anchor_offset_x) / fw as f32,
                            y_center: (y as f32 + o.anchor_offset_y) / fh as f32,
                            w,
                            h,
                        });
                    }
                }
            }
        }
        layer = last;
    }
    anchors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_range_counts_and_positions() {
        let a = generate_anchors(&AnchorOptions::blazeface_short());
        // 16x16 cells x 2 anchors (stride 8) + 8x8 cells x 6 anchors (three stride-16 layers).
        assert_eq!(a.len(), 16 * 16 * 2 + 8 * 8 * 6);
        assert_eq!(a.len(), 896);
        // First cell of the 16x16 grid, both anchors: centre (0.5/16, 0.5/16).
        assert_eq!(a[0], Anchor { x_center: 0.03125, y_center: 0.03125, w: 1.0, h: 1.0 });
        assert_eq!(a[1], a[0]);
        // Second column: x = 1.5/16.
        assert_eq!(a[2].x_center, 0.09375);
        assert_eq!(a[2].y_center, 0.03125);
        // Last anchor of the first grid: cell (15,15).
        assert_eq!(a[511].x_center, 15.5 / 16.0);
        // First anchor of the 8x8 grid, then 6 anchors per cell.
        assert_eq!(a[512].x_center, 0.0625);
        assert_eq!(a[517], a[512]);
        assert_eq!(a[518].x_center, 0.1875);
        assert_eq!(a[895].x_center, 7.5 / 8.0);
        assert_eq!(a[895].y_center, 7.5 / 8.0);
    }

    #[test]
    fn full_range_counts_and_positions() {
        let a = generate_anchors(&AnchorOptions::blazeface_full());
        assert_eq!(a.len(), 48 * 48);
        assert_eq!(a[0].x_center, 0.5 / 48.0);
        assert_eq!(a[1].x_center, 1.5 / 48.0);
        assert_eq!(a[48].y_center, 1.5 / 48.0);
        assert_eq!(a[48].x_center, 0.5 / 48.0);
    }

    #[test]
    fn sizes_without_fixed_anchor_size() {
        // Two layers of different strides: scales 0.1 and 0.5 (min + (max-min)*i/(n-1)).
        let o = AnchorOptions {
            input_width: 8,
            input_height: 8,
            min_scale: 0.1,
            max_scale: 0.5,
            anchor_offset_x: 0.5,
            anchor_offset_y: 0.5,
            strides: vec![4, 8],
            aspect_ratios: vec![4.0],
            interpolated_scale_aspect_ratio: 0.0,
            fixed_anchor_size: false,
        };
        let a = generate_anchors(&o);
        assert_eq!(a.len(), 2 * 2 + 1);
        // Aspect 4: w = s*2, h = s/2.
        assert!((a[0].w - 0.2).abs() < 1e-6 && (a[0].h - 0.05).abs() < 1e-6);
        assert!((a[4].w - 1.0).abs() < 1e-6 && (a[4].h - 0.25).abs() < 1e-6);
        assert_eq!((a[4].x_center, a[4].y_center), (0.5, 0.5));
        // A zero stride is skipped, not a panic.
        let z = AnchorOptions { strides: vec![0], ..o };
        assert!(generate_anchors(&z).is_empty());
    }
}
