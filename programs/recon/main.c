/* SPDX-License-Identifier: Apache-2.0 */
/* main.c: starproj-recon, which simulates PET data of a phantom on a scanner preset (or reads raw sinogram /
 * listmode files) and reconstructs it with OSEM or LM-OSEM on whatever devices StarPU drives, writing NIfTI images
 * and PNG previews.
 * The order of a run: options, inputs read and checked against the scanner, sizes bounded by the memory they need,
 * and only then the output folder and StarPU, so that every refusal comes at once and leaves nothing behind. */
#include <string.h>
#include "recon.h"

int quiet;

int main(int argc, char **argv)
{
  /* whole lines as they happen, also into a pipe (tee, a batch system's log) */
  setvbuf(stdout, NULL, _IOLBF, 0);
  remove_written_at_exit();
  struct options o;
  int rc = parse_options(argc, argv, &o);
  if (rc)
    return rc;
  quiet = o.quiet;
  struct inputs in;
  struct run r;
  memset(&r, 0, sizeof r);
  if (!(rc = read_headers(&o, &in)) && !(rc = pick_scanner(&o, &in))) {
    resolve_defaults(&o);
    make_layout(&o, &r.l);
    if (!(rc = validate_run(&o, &r.l, in.lm_info.num_events)) && !(rc = check_inputs(&o, &in, &r.l))) {
      /* reading large inputs is a phase of the run's table */
      if (o.input || o.input_lm) {
        progress_start("starproj-recon", o.quiet);
        progress_detail(o.verbose);
        progress_phase("reading");
      }
      if (!(rc = read_inputs(&o, &in)) && !(rc = check_inputs(&o, &in, &r.l)))
        rc = make_output_folder(o.output);
    }
  }
  if (rc) {
    if (o.input || o.input_lm)
      progress_stop();
    sproj_scanner_destroy(r.l.scanner);
    free_inputs(&in);
    return rc;
  }

  catch_signals();
  if (!o.input && !o.input_lm) {
    progress_start("starproj-recon", o.quiet);
    progress_detail(o.verbose);
  }
  progress_phase("starting StarPU");
  start_starpu(&o, &r.l);
  progress_phase("geometry");
  setup_lors(&o, &r);
  estimate(&o, &r, in.lm_info.num_events); /* a phase of its own only where it measures */
  if (!o.input && !o.input_lm) {
    progress_phase("simulation");
    simulate(&o, &r);
  } else {
    use_inputs(&o, &in, &r);
  }
  if (o.save_data && !o.input && !o.input_lm) {
    progress_phase("saving the data");
    save_data(&o, &r);
  }
  reconstruct(&o, &r); /* its phases: upload, sensitivities, iterations */
  progress_phase("writing");
  write_outputs(&o, &r);
  keep_written();
  progress_end();
  if (r.phantom)
    report_error(&r);
  progress_phase("shutdown");
  finish(&r, &in);
  progress_end();
  progress_summary();
  progress_stop();
  return 0;
}
