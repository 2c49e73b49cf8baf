# SPDX-License-Identifier: Apache-2.0
# Sourced by stir/bench/time-to-image.sh and stir/bench/osmaposl-timing.sh: the phantom both benchmarks project.
# phantom_pars XY DEVICES writes, into the current folder, phantom.par (STIR's generate_image: an off-centre elliptic
# cylinder with a hotter ball inside, on mMR voxels: XY x XY x 127, the bin size across, half the ring spacing along
# the axis) and forward.par (the Starproj forward projector on DEVICES: gpu, cpu or any).
phantom_pars() {
  local xy=$1 devices=$2 rx ry
  rx=$(awk -v n="$xy" 'BEGIN { printf "%.1f", n * 2.08626 * 0.22 }')
  ry=$(awk -v n="$xy" 'BEGIN { printf "%.1f", n * 2.08626 * 0.15 }')
  cat >phantom.par <<PAR
generate_image Parameters :=
output filename := phantom
X output image size (in pixels) := $xy
Y output image size (in pixels) := $xy
Z output image size (in pixels) := 127
X voxel size (in mm) := 2.08626
Y voxel size (in mm) := 2.08626
Z voxel size (in mm) := 2.03125
  Z number of samples to take per voxel := 1
  Y number of samples to take per voxel := 1
  X number of samples to take per voxel := 1
shape type := ellipsoidal cylinder
Ellipsoidal Cylinder Parameters :=
   radius-x (in mm) := $rx
   radius-y (in mm) := $ry
   length-z (in mm) := 180
   origin (in mm) := {10, 12, -6}
   END :=
value := 1
next shape :=
shape type := ellipsoid
Ellipsoid Parameters :=
   radius-x (in mm) := 20
   radius-y (in mm) := 20
   radius-z (in mm) := 20
   origin (in mm) := {30, -10, 20}
   END :=
value := 3
END :=
PAR
  cat >forward.par <<PAR
Forward Projector parameters :=
type := Starproj
Forward Projector Using Starproj Parameters :=
devices := $devices
End Forward Projector Using Starproj Parameters :=
End :=
PAR
}
