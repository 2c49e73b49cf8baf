/* SPDX-License-Identifier: Apache-2.0 */
/* starproj_io.h: images and projection data in files: NIfTI-1 (nifticlib), raw data with a text header, PNG
 * previews (libpng). Library libstarproj-io. */
#ifndef STARPROJ_IO_H
#define STARPROJ_IO_H

#include "starproj.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Host-side calls: they need neither sproj_init nor StarPU, and are safe from several threads at once (each call
 * works on its own arguments). Arrays they allocate for the caller are freed with sproj_free (starproj.h). */

/* Files are written atomically: the data goes to a temporary file in the target's folder (named
 * ".<name>.tmp-<pid>-<n>"), which is renamed to the target only once everything is written and flushed. On any
 * failure the temporary file is removed, and a file already at the target stays as it was. Each write first
 * removes the temporaries of the same target that processes which no longer exist left in that folder (pid not
 * alive: kill(pid, 0) fails with ESRCH; a process of another PID namespace sharing the folder would count as dead).
 *
 * Inputs are opened without blocking and read only if they are regular files: a FIFO, a device, a folder or a
 * path that cannot be resolved (a symbolic link loop) is refused at once with SPROJ_ERR_IO, and sizes are compared
 * with what the header describes before any memory is reserved for the data. */

/* Removes the temporary files of the writes that this process has under way (at most 64 at a time are tracked;
 * for raw data also the new data file, which no header names yet), for a program's SIGINT / SIGTERM handler to
 * call before it exits: async-signal-safe (no allocation, no lock; errno is preserved), callable from any thread,
 * also while a write is in progress on another thread or on the interrupted one. Paths are as the writes were
 * given them: relative ones count from the working directory of the time. A write whose temporary or new data
 * was removed fails (SPROJ_ERR_IO) if the program goes on, and the files in place stay as they were. A raw write's
 * new data goes with its header's temporary: until the rename that puts the header in place both are removed,
 * from then on neither (the new pair is in place; what it replaced is removed by the write, or by the next write
 * of the base if the program ends first).
 * On SIGKILL (or a crash) nothing can run: the target stays as it was before the write or is the new file, and
 * at most one ".<name>.tmp-<pid>-<n>" (and for raw data possibly a data file that no header names) is left; the
 * next write of that target in that folder removes them, since that pid is then dead. */
SPROJ_API void sproj_io_remove_temporaries(void);

/* Writes an image as NIfTI-1 (a single .nii file, float32, native byte order). The path must end in ".nii".
 * The image is float data[n0][n1][n2] (axis 2 fastest), voxel_size[3] > 0 and origin[3] (centre of voxel (0,0,0))
 * in mm, as for sproj_image_register. NIfTI's indices (i, j, k) are starproj's axes (0, 1, 2): dim = (n0, n1, n2),
 * pixdim = (vs0, vs1, vs2), and since NIfTI's i runs fastest the voxels are stored transposed from starproj's C
 * order, so that a NIfTI reader's array is the image as starproj (and parallelproj) index it: nibabel's
 * get_fdata()[i, j, k] == data[i][j][k], shape (n0, n1, n2), data[..., k] the transaxial plane k. The qform and
 * sform (both code 1, scanner coordinates) are the same diagonal affine: voxel (i, j, k) is at the world point
 *   x = origin[0] + i*vs0,  y = origin[1] + j*vs1,  z = origin[2] + k*vs2
 * (starproj's coordinates, the LORs' frame; identity quaternion, qfac +1). Units: mm (xyzt_units). Files of
 * starproj before this layout had i = axis 2 and k = axis 0 with a permuted affine; sproj_nifti_read still reads
 * them to the same image. description: optional text (first 79 characters kept, NULL: none). Errors: NULL,
 * INVALID (path), DIMS, VOXEL_SIZE, NONFINITE, OVERFLOW (also a size > 32767, NIfTI-1's limit), NOMEM, IO. */
SPROJ_API int sproj_nifti_write(const char *path, const float *data, const int dims[3], const float voxel_size[3],
                                const float origin[3], const char *description);

/* Reads a NIfTI-1 image (.nii, .nii.gz, .hdr/.img with or without .gz; any of NIfTI's real data types,
 * converted to float with the file's scl_slope / scl_inter when scl_slope != 0) into a new array *data (free with
 * sproj_free) in starproj's layout (C order, axis 2 fastest). Which file axis becomes which starproj axis is read
 * from the affine, the sform if sform_code > 0, else the qform if qform_code > 0:
 * - its linear part is a permutation matrix times a diagonal (within float round-off; every file of
 *   sproj_nifti_write, of earlier starproj versions, and the usual axis-aligned files of other writers): file
 *   axis c becomes the starproj axis of the world coordinate it runs along (i along x: axis 0, ...), reversed
 *   where it runs against that coordinate (a negative entry, e.g. nibabel's default x flip); voxel sizes are
 *   the absolute entries (the sform's; pixdim for the qform) and origin is the world position of the voxel that
 *   becomes (0,0,0). The image is then right in starproj's coordinates, whatever order the file is stored in.
 * - any other affine (oblique, sheared), or none (both codes 0): the axes are taken in index order, (i, j, k) ->
 *   (0, 1, 2), voxel sizes = pixdim[1..3], origin = the affine's translation (the world position of file voxel
 *   (0,0,0)), 0 without an affine; the directions of the axes are not applied (starproj's images are
 *   axis-aligned), so such a file is placed correctly only in its voxel (0,0,0).
 * For files written by sproj_nifti_write this is the exact inverse. origin may be NULL. An axis beyond dim[0] has
 * 1 voxel (of pixdim's size if that is > 0, else 1).
 * starproj reads the header and the data itself from the file it opened and checked (nifticlib never opens it),
 * validates every field it uses and repairs none; all sizes are compared with the file's before the array is
 * reserved. A .nii.gz file's uncompressed size is not known before it is read: its header may claim at most 1032
 * times the compressed size (deflate's largest ratio), the rest is found when the stream ends early.
 * Errors: NULL; IO (cannot open or read, not a regular file, data cut short: the file, or for .gz 1032 times its
 * size, is smaller than vox_offset + the data's size, or the stream ends early); FORMAT (not NIfTI-1: sizeof_hdr
 * not 348, magic neither "n+1" nor "ni1" (ANALYZE 7.5 files are not read); dim[0] not 1 .. 7 or a size < 1; more
 * than 3 dimensions with a size > 1; complex or RGB data; pixdim of an axis not finite and > 0; with qform_code
 * > 0, a quaternion, offset or qfac not finite; with sform_code > 0, an srow number not finite; scl_slope != 0 with
 * slope or intercept not finite; vox_offset not a whole number >= 352 (>= 0 in a .hdr/.img pair) or beyond the
 * end of the file; extensions of sizes not multiples of 16 or running past vox_offset); OVERFLOW (the image's
 * size), NOMEM. A failed read changes none of the outputs. */
SPROJ_API int sproj_nifti_read(const char *path, float **data, int dims[3], float voxel_size[3], float origin[3]);

/* Raw data with a text header: "<base>.hdr" holds "key = value" lines, the data file it names the numbers, C
 * order (the last axis fastest), native byte order (recorded in the header; the readers swap if needed). Keys:
 *   format = starproj-raw 1              content = sinogram | listmode
 *   data_file = <name>                   data_type = float32 | int32
 *   byte_order = little-endian | big-endian
 *   shape = <n1> <n2> ...                (slowest first)      axes = <name1> <name2> ...
 *   scanner = <text>                     num_tof_bins = <n>   tof_bin_width = <mm>
 * and, for listmode, fields = lor tof_bin, num_lors = <n>. Lines starting with '#' are comments; unknown keys are
 * ignored. base may be given with or without ".hdr". Readers take the data from the file data_file names, in the
 * header's folder: a plain name (no '/', not "." or ".."; else FORMAT).
 * A pair is replaced atomically: a write puts its data in a new file, "<base>.raw" if that name is free, else
 * "<base>.raw.<pid>-<n>", writes the header naming it as ".<base>.hdr.tmp-<pid>-<n>", syncs both, and renames that
 * over "<base>.hdr": at every instant the folder holds the old pair or the new one. Then it removes what no header
 * names any more: the data file the old header named (if it is named as this writer names them: "<base>.raw" or
 * "<base>.raw.<pid>-<n>"; a name of the user's own stays), the temporaries and "<base>.raw.<pid>-<n>" files of
 * dead processes (left by a write killed before its rename), and a "<base>.raw" the new header does not name,
 * unless another write of the base is under way (a live process's ".<base>.hdr.tmp-" file is there). A failed
 * write removes its new files and leaves the old pair as it was. Writes of one base by several processes at once
 * are not supported (the last rename wins; a cleanup may then remove the other's data). */
#define SPROJ_RAW_MAX_DIMS 8
#define SPROJ_RAW_NAME_LEN 32

/* A sinogram: a float32 array of any layout, described by the names of its axes. */
struct sproj_sino_info {
  int num_dims;                                         /* 1 .. SPROJ_RAW_MAX_DIMS */
  int64_t shape[SPROJ_RAW_MAX_DIMS];                    /* size of each axis, slowest first; > 0 */
  char axes[SPROJ_RAW_MAX_DIMS][SPROJ_RAW_NAME_LEN];    /* what each axis is: "view", "radial", "plane",
                                                         * "tof_bin", ...; letters, digits and _-.+ */
  char scanner[64];                                     /* scanner preset name, "" if none (characters as
                                                         * for axes) */
  int num_tof_bins;                                     /* 0 for non-TOF data */
  float tof_bin_width;                                  /* mm, 0 for non-TOF data */
};

/* Writes <base>.hdr and its data file (see above). Errors: NULL, INVALID (names with other characters, empty
 * base), DIMS, OVERFLOW (more than 2^62 bytes), TOF (num_tof_bins or tof_bin_width negative or not finite), NOMEM,
 * IO. */
SPROJ_API int sproj_raw_write_sino(const char *base, const struct sproj_sino_info *info, const float *data);
/* Reads them back: *info and a new array *data (free with sproj_free). Errors: NULL, IO (a file cannot be opened
 * or read, or is no regular file: FIFO, device, folder), FORMAT (missing or malformed key, content not "sinogram",
 * data type not float32, data file of another size than the shape says, header larger than 64 KiB or holding a
 * NUL byte), OVERFLOW, NOMEM. A failed read changes neither *info nor *data. */
SPROJ_API int sproj_raw_read_sino(const char *base, struct sproj_sino_info *info, float **data);
/* Reads only the header, for a caller that checks a sinogram's layout before it reserves memory for the data: *info
 * as sproj_raw_read_sino gives it, once the data file is found to be a regular file of the size the header
 * describes (opened, not read). Errors: as sproj_raw_read_sino, less NOMEM for the data; the values are not read,
 * so a file that cannot be read past its start is found only by sproj_raw_read_sino. */
SPROJ_API int sproj_raw_read_sino_info(const char *base, struct sproj_sino_info *info);

/* Listmode: num_events events, each two int32 fields in the file (shape = num_events 2, axes = event field,
 * fields = lor tof_bin): the index of the event's LOR in the scanner's LOR enumeration (0 .. num_lors-1) and its
 * TOF bin (0 .. num_tof_bins-1; 0 for non-TOF data). */
struct sproj_lm_info {
  int64_t num_events;   /* >= 0 (an empty list is valid) */
  int64_t num_lors;     /* size of the LOR enumeration, 1 .. 2^31-1 */
  char scanner[64];     /* scanner preset name, "" if none */
  int num_tof_bins;     /* 0 for non-TOF data (every tof_bin then 0) */
  float tof_bin_width;  /* mm, 0 for non-TOF data */
};
/* Writes <base>.hdr and its data file. tof_bin may be NULL (all 0). Errors: NULL, INVALID (names), DIMS (negative
 * count), RANGE (num_lors, an LOR outside 0 .. num_lors-1, a bin outside 0 .. max(num_tof_bins,1)-1), OVERFLOW
 * (more than 2^59 events), TOF, NOMEM, IO. */
SPROJ_API int sproj_raw_write_listmode(const char *base, const struct sproj_lm_info *info, const int32_t *lor,
                                       const int16_t *tof_bin);
/* Reads them back into new arrays *lor and *tof_bin (free both with sproj_free; NULL when there are no events).
 * tof_bin may be NULL if the bins are not wanted. Errors: as sproj_raw_read_sino (content "listmode", data type
 * int32, fields lor tof_bin), plus FORMAT for an event whose LOR or bin is out of its range. */
SPROJ_API int sproj_raw_read_listmode(const char *base, struct sproj_lm_info *info, int32_t **lor, int16_t **tof_bin);
/* Reads only the header, like sproj_raw_read_sino_info: *info (num_events from the shape) once the data file is
 * found to be a regular file of the events' size. The events themselves, and so their ranges, are not read. */
SPROJ_API int sproj_raw_read_listmode_info(const char *base, struct sproj_lm_info *info);

/* PNG previews (8-bit greyscale, no text: the plain previews a program falls back to when it has no plotting tool;
 * starproj-recon draws labelled ones with gnuplot). window: {lo, hi} mapped to black .. white, or NULL: lo = 0 and
 * hi = the 99.5th percentile of the finite values shown (the largest finite value if that is not > 0; min .. max
 * if that is not > 0 either). NaN and values below lo are black, values above hi white. Pass one window to
 * several calls (e.g. a reconstruction and its phantom) to show them on the same scale. */

/* Three slices of an image side by side, each scaled with nearest-neighbour sampling to square pixels (voxel
 * aspect ratio respected) of a common pitch, the largest extent shown over about 256 pixels; index 0 of an axis
 * at the top or left: transaxial (axis 2 fixed; rows: axis 1, columns: axis 0), coronal (axis 1 fixed; rows:
 * axis 2, columns: axis 0) and sagittal (axis 0 fixed; rows: axis 2, columns: axis 1), separated by 4 black
 * columns. sproj_png_write_image shows the central slices (index n/2 of each fixed axis);
 * sproj_png_write_image_slices the ones given: slices[a] = the index at which the panel fixing axis a holds it
 * (0 .. dims[a]-1), NULL: the central ones. Errors: NULL, DIMS, VOXEL_SIZE, OVERFLOW, INVALID (window lo >= hi or
 * not finite), RANGE (a slice index), NOMEM, IO. */
SPROJ_API int sproj_png_write_image(const char *path, const float *data, const int dims[3], const float voxel_size[3],
                                    const float window[2]);
SPROJ_API int sproj_png_write_image_slices(const char *path, const float *data, const int dims[3],
                                           const float voxel_size[3], const int slices[3], const float window[2]);
/* One 2-D section of a sinogram: plane_axis down the rows, radial_axis across the columns, at index view of
 * view_axis; a fourth axis (TOF bins) is summed over. Any axis may be the one held fixed: view_axis = the plane
 * axis with plane_axis = the view axis shows the sinogram (radial bin x view) of plane `view`. num_dims is 3 or
 * 4, shape slowest first, the three axis arguments distinct and < num_dims. Each bin becomes an s x s block, s the
 * largest integer (1 .. 8) keeping both sides <= 2048 pixels (sampled down when one side has more than 2048
 * bins). Errors: NULL, DIMS, INVALID, RANGE (view), OVERFLOW, NOMEM, IO. */
SPROJ_API int sproj_png_write_sino(const char *path, const float *sino, int num_dims, const int64_t *shape, int view_axis,
                                   int radial_axis, int plane_axis, int64_t view, const float window[2]);

/* The display window the writers above take for window == NULL, for a caller that draws its own previews or
 * shows several arrays on one scale: *window = {0, the 99.5th percentile of the finite values of v[0 .. n-1]}
 * (the value at index floor(0.995 (m - 1)) of the m finite values sorted ascending); where that is not > 0, the
 * largest finite value; where that is not > 0 either, {smallest, largest}, or {v - 1, v} when every finite value
 * is the same v. No finite value (n = 0, or only NaN and infinities): {0, 1}. v is not modified (a copy of its
 * finite values is sorted). Errors: NULL (window; v with n > 0), NOMEM; a failed call leaves window as it was. */
SPROJ_API int sproj_png_auto_window(const float *v, size_t n, float window[2]);


#ifdef __cplusplus
}
#endif

#endif /* STARPROJ_IO_H */
