//! Launch configurations: grid and block sizes for each kernel family, clamped to the
//! hardware limits (grid.x < 2^31, grid.y/z < 2^16).

use crate::error::{Error, Result};

/// A grid/block/shared-memory triple, as `cuLaunchKernel` takes it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct LaunchConfig {
    /// Blocks per grid (x, y, z).
    pub grid: (u32, u32, u32),
    /// Threads per block (x, y, z).
    pub block: (u32, u32, u32),
    /// Dynamic shared memory bytes.
    pub shared: u32,
}

/// Threads per block for the elementwise (grid-stride) kernels.
pub const LINEAR_BLOCK: u32 = 256;
/// Grid-stride kernels never need more than this many blocks: each thread loops.
pub const MAX_LINEAR_BLOCKS: u64 = 65_535 * 8;
const MAX_GRID_YZ: u64 = 65_535;

impl LaunchConfig {
    /// A grid-stride launch over `n` elements: enough blocks to cover `n` (at least one), at
    /// most [`MAX_LINEAR_BLOCKS`].
    pub fn linear(n: u64) -> LaunchConfig {
        let blocks = n.div_ceil(LINEAR_BLOCK as u64).clamp(1, MAX_LINEAR_BLOCKS);
        LaunchConfig { grid: (blocks as u32, 1, 1), block: (LINEAR_BLOCK, 1, 1), shared: 0 }
    }

    /// A grid-stride launch over `n` elements per image for `images` images (grid.y), as the
    /// preprocessing kernel takes it.
    pub fn per_image(n: u64, images: u64) -> Result<LaunchConfig> {
        if images == 0 || images > MAX_GRID_YZ {
            return Err(Error::Invalid(format!("batch of {images} images: must be 1..={MAX_GRID_YZ}")));
        }
        let mut c = LaunchConfig::linear(n);
        c.grid.1 = images as u32;
        Ok(c)
    }

    /// The tiled GEMM and implicit-GEMM conv: 64x64 tiles of an `m` x `n` output, `z`
    /// batches or groups, 256 threads.
    pub fn gemm_tiles(m: u64, n: u64, z: u64) -> Result<LaunchConfig> {
        tiles(m, n, z, 64, 256)
    }

    /// The tensor-core implicit-GEMM convs (`conv_tc128_f16w`, `conv_tc64_f16w`): `tile` x
    /// `tile` tiles of the `m` (output channels per group) x `n` (output pixels) output, `z`
    /// groups, 2 * `tile` threads.
    pub fn conv_tc(m: u64, n: u64, z: u64, tile: u32) -> Result<LaunchConfig> {
        if tile != 64 && tile != 128 {
            return Err(Error::Invalid(format!("tensor-core conv tile {tile}: 64 or 128")));
        }
        tiles(m, n, z, tile as u64, 2 * tile)
    }

    /// The WMMA GEMM: 32x32 tiles, 4 warps; needs `m`, `n` and `k` multiples of 16.
    pub fn gemm_wmma(m: u64, n: u64, k: u64, z: u64) -> Result<LaunchConfig> {
        if !m.is_multiple_of(16) || !n.is_multiple_of(16) || !k.is_multiple_of(16) {
            return Err(Error::Invalid(format!("WMMA GEMM needs M, N, K multiples of 16, got {m}x{n}x{k}")));
        }
        tiles(m, n, z, 32, 128)
    }

    /// The INT8 GEMM: 16x16 tiles, 256 threads.
    pub fn gemm_s8(m: u64, n: u64) -> Result<LaunchConfig> {
        tiles(m, n, 1, 16, 256)
    }

    /// Row softmax: one 256-thread block per row (grid.x), rows over 2^31 refused.
    pub fn rows(rows: u64) -> Result<LaunchConfig> {
        if rows == 0 || rows > i32::MAX as u64 {
            return Err(Error::Invalid(format!("{rows} rows: out of range for one launch")));
        }
        Ok(LaunchConfig { grid: (rows as u32, 1, 1), block: (256, 1, 1), shared: 0 })
    }

    /// One warp per plane (global pooling), 256 threads per block.
    pub fn warp_per_item(items: u64) -> LaunchConfig {
        LaunchConfig::linear(items.saturating_mul(32))
    }

    /// Total threads launched.
    pub fn threads(&self) -> u64 {
        let g = self.grid.0 as u64 * self.grid.1 as u64 * self.grid.2 as u64;
        g * (self.block.0 * self.block.1 * self.block.2) as u64
    }
}

fn tiles(m: u64, n: u64, z: u64, tile: u64, threads: u32) -> Result<LaunchConfig> {
    let gx = n.div_ceil(tile).max(1);
    let gy = m.div_ceil(tile).max(1);
    let z = z.max(1);
    if gx > i32::MAX as u64 || gy > MAX_GRID_YZ || z > MAX_GRID_YZ {
        return Err(Error::Invalid(format!(
            "a {m}x{n} output in {tile}x{tile} tiles with {z} batches exceeds the grid limits"
        )));
    }
    Ok(LaunchConfig { grid: (gx as u32, gy as u32, z as u32), block: (threads, 1, 1), shared: 0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_covers_every_element_or_loops() {
        for n in [0u64, 1, 7, 13, 255, 256, 257, 1026, 1 << 20, 1 << 40] {
            let c = LaunchConfig::linear(n);
            assert!(c.grid.0 >= 1);
            assert_eq!(c.block, (256, 1, 1));
            // Either one thread per element, or the grid is at its cap and threads loop.
            assert!(c.threads() >= n || c.grid.0 as u64 == MAX_LINEAR_BLOCKS, "n={n} {c:?}");
            // Never more blocks than needed.
            assert!(c.grid.0 as u64 <= n.div_ceil(256).max(1));
        }
    }

    #[test]
    fn tiles_cover_remainders() {
        let c = LaunchConfig::gemm_tiles(65, 1026, 3).unwrap();
        assert_eq!(c.grid, (17, 2, 3));
        assert_eq!(c.block.0, 256);
        let c = LaunchConfig::gemm_tiles(64, 64, 0).unwrap();
        assert_eq!(c.grid, (1, 1, 1));
        assert!(LaunchConfig::gemm_tiles(64 * 70_000, 64, 1).is_err());
        assert!(LaunchConfig::gemm_tiles(64, 64, 70_000).is_err());
        assert_eq!(LaunchConfig::gemm_wmma(32, 48, 16, 1).unwrap().grid, (2, 1, 1));
        assert!(LaunchConfig::gemm_wmma(30, 48, 16, 1).is_err());
        // ResNet-50 at batch 64: layer1's 1x1 expand (256 channels) and its 3x3 conv (64
        // channels), each over 64*56*56 pixels.
        let c = LaunchConfig::conv_tc(256, 64 * 56 * 56, 1, 128).unwrap();
        assert_eq!((c.grid, c.block.0), ((1568, 2, 1), 256));
        let c = LaunchConfig::conv_tc(64, 64 * 56 * 56, 1, 64).unwrap();
        assert_eq!((c.grid, c.block.0), ((3136, 1, 1), 128));
        assert_eq!(LaunchConfig::conv_tc(129, 129, 2, 128).unwrap().grid, (2, 2, 2));
        assert!(LaunchConfig::conv_tc(129, 129, 2, 32).is_err());
        assert_eq!(LaunchConfig::gemm_s8(17, 33).unwrap().grid, (3, 2, 1));
    }

    #[test]
    fn per_image_and_rows_limits() {
        let c = LaunchConfig::per_image(128 * 128, 32).unwrap();
        assert_eq!(c.grid.1, 32);
        assert!(LaunchConfig::per_image(10, 0).is_err());
        assert!(LaunchConfig::per_image(10, 70_000).is_err());
        assert_eq!(LaunchConfig::rows(7).unwrap().grid.0, 7);
        assert!(LaunchConfig::rows(0).is_err());
        assert_eq!(LaunchConfig::warp_per_item(8).threads(), 256);
    }
}
