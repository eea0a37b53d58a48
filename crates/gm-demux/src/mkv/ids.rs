//! Matroska element IDs (with their length-marker bits, as the specification writes them) and
//! the names used in error messages.

/// EBML header.
pub(crate) const EBML: u32 = 0x1A45_DFA3;
/// EBML header: DocType.
pub(crate) const DOC_TYPE: u32 = 0x4282;
/// Segment.
pub(crate) const SEGMENT: u32 = 0x1853_8067;
/// SeekHead (Segment level).
pub(crate) const SEEK_HEAD: u32 = 0x114D_9B74;
/// SeekHead: Seek.
pub(crate) const SEEK: u32 = 0x4DBB;
/// Seek: SeekID (the target's ID, as binary).
pub(crate) const SEEK_ID: u32 = 0x53AB;
/// Seek: SeekPosition (relative to the Segment's data).
pub(crate) const SEEK_POSITION: u32 = 0x53AC;
/// Info (Segment level).
pub(crate) const INFO: u32 = 0x1549_A966;
/// Info: TimestampScale (nanoseconds per tick).
pub(crate) const TIMESTAMP_SCALE: u32 = 0x2AD7B1;
/// Tracks (Segment level).
pub(crate) const TRACKS: u32 = 0x1654_AE6B;
/// Tracks: TrackEntry.
pub(crate) const TRACK_ENTRY: u32 = 0xAE;
/// TrackEntry: TrackNumber.
pub(crate) const TRACK_NUMBER: u32 = 0xD7;
/// TrackEntry: TrackType (1 = video).
pub(crate) const TRACK_TYPE: u32 = 0x83;
/// TrackEntry: CodecID.
pub(crate) const CODEC_ID: u32 = 0x86;
/// TrackEntry: CodecPrivate.
pub(crate) const CODEC_PRIVATE: u32 = 0x63A2;
/// TrackEntry: DefaultDuration (nanoseconds).
pub(crate) const DEFAULT_DURATION: u32 = 0x23E383;
/// TrackEntry: CodecDelay (nanoseconds).
pub(crate) const CODEC_DELAY: u32 = 0x56AA;
/// TrackEntry: ContentEncodings (compression, encryption).
pub(crate) const CONTENT_ENCODINGS: u32 = 0x6D80;
/// TrackEntry: Video.
pub(crate) const VIDEO: u32 = 0xE0;
/// Video: PixelWidth.
pub(crate) const PIXEL_WIDTH: u32 = 0xB0;
/// Video: PixelHeight.
pub(crate) const PIXEL_HEIGHT: u32 = 0xBA;
/// Video: Colour.
pub(crate) const COLOUR: u32 = 0x55B0;
/// Colour: ChromaSitingHorz (0 unspecified, 1 left collocated, 2 half).
pub(crate) const CHROMA_SITING_HORZ: u32 = 0x55B7;
/// Colour: ChromaSitingVert (0 unspecified, 1 top collocated, 2 half).
pub(crate) const CHROMA_SITING_VERT: u32 = 0x55B8;
/// Video: Projection.
pub(crate) const PROJECTION: u32 = 0x7670;
/// Projection: ProjectionType (0 rectangular, the default; 1-3 spherical).
pub(crate) const PROJECTION_TYPE: u32 = 0x7671;
/// Projection: ProjectionPoseYaw (degrees; 180 mirrors a rectangular picture).
pub(crate) const PROJECTION_POSE_YAW: u32 = 0x7673;
/// Projection: ProjectionPosePitch (degrees).
pub(crate) const PROJECTION_POSE_PITCH: u32 = 0x7674;
/// Projection: ProjectionPoseRoll (degrees, counter-clockwise).
pub(crate) const PROJECTION_POSE_ROLL: u32 = 0x7675;
/// Cues (Segment level).
pub(crate) const CUES: u32 = 0x1C53_BB6B;
/// Cues: CuePoint.
pub(crate) const CUE_POINT: u32 = 0xBB;
/// CuePoint: CueTime.
pub(crate) const CUE_TIME: u32 = 0xB3;
/// CuePoint: CueTrackPositions.
pub(crate) const CUE_TRACK_POSITIONS: u32 = 0xB7;
/// CueTrackPositions: CueTrack.
pub(crate) const CUE_TRACK: u32 = 0xF7;
/// Cluster (Segment level).
pub(crate) const CLUSTER: u32 = 0x1F43_B675;
/// Cluster: Timestamp.
pub(crate) const TIMESTAMP: u32 = 0xE7;
/// Cluster: SimpleBlock.
pub(crate) const SIMPLE_BLOCK: u32 = 0xA3;
/// Cluster: BlockGroup.
pub(crate) const BLOCK_GROUP: u32 = 0xA0;
/// BlockGroup: Block.
pub(crate) const BLOCK: u32 = 0xA1;
/// BlockGroup: ReferenceBlock (its presence makes the Block a non-keyframe).
pub(crate) const REFERENCE_BLOCK: u32 = 0xFB;
/// BlockGroup: BlockDuration (Segment ticks).
pub(crate) const BLOCK_DURATION: u32 = 0x9B;
/// Tags (Segment level).
pub(crate) const TAGS: u32 = 0x1254_C367;
/// Chapters (Segment level).
pub(crate) const CHAPTERS: u32 = 0x1043_A770;
/// Attachments (Segment level).
pub(crate) const ATTACHMENTS: u32 = 0x1941_A469;
/// Void (padding, anywhere).
pub(crate) const VOID: u32 = 0xEC;
/// CRC-32 (anywhere).
pub(crate) const CRC32: u32 = 0xBF;

/// Whether `id` cannot be a child of a Cluster and so ends an unknown-size one: the EBML
/// header, Segment, and every Segment-level element (another Cluster included).
pub(crate) fn ends_cluster(id: u32) -> bool {
    matches!(
        id,
        EBML | SEGMENT | SEEK_HEAD | INFO | TRACKS | CUES | CLUSTER | TAGS | CHAPTERS | ATTACHMENTS
    )
}

/// The element's name for messages, e.g. `Cluster (0x1F43B675)`.
pub(crate) fn describe(id: u32) -> String {
    let name = match id {
        EBML => "EBML header",
        DOC_TYPE => "DocType",
        SEGMENT => "Segment",
        SEEK_HEAD => "SeekHead",
        SEEK => "Seek",
        SEEK_ID => "SeekID",
        SEEK_POSITION => "SeekPosition",
        INFO => "Info",
        TIMESTAMP_SCALE => "TimestampScale",
        TRACKS => "Tracks",
        TRACK_ENTRY => "TrackEntry",
        TRACK_NUMBER => "TrackNumber",
        TRACK_TYPE => "TrackType",
        CODEC_ID => "CodecID",
        CODEC_PRIVATE => "CodecPrivate",
        DEFAULT_DURATION => "DefaultDuration",
        CODEC_DELAY => "CodecDelay",
        CONTENT_ENCODINGS => "ContentEncodings",
        VIDEO => "Video",
        PIXEL_WIDTH => "PixelWidth",
        PIXEL_HEIGHT => "PixelHeight",
        PROJECTION => "Projection",
        PROJECTION_TYPE => "ProjectionType",
        PROJECTION_POSE_YAW => "ProjectionPoseYaw",
        PROJECTION_POSE_PITCH => "ProjectionPosePitch",
        PROJECTION_POSE_ROLL => "ProjectionPoseRoll",
        CUES => "Cues",
        CUE_POINT => "CuePoint",
        CUE_TIME => "CueTime",
        CUE_TRACK_POSITIONS => "CueTrackPositions",
        CUE_TRACK => "CueTrack",
        CLUSTER => "Cluster",
        TIMESTAMP => "Timestamp",
        SIMPLE_BLOCK => "SimpleBlock",
        BLOCK_GROUP => "BlockGroup",
        BLOCK => "Block",
        REFERENCE_BLOCK => "ReferenceBlock",
        BLOCK_DURATION => "BlockDuration",
        TAGS => "Tags",
        CHAPTERS => "Chapters",
        ATTACHMENTS => "Attachments",
        VOID => "Void",
        CRC32 => "CRC-32",
        _ => return format!("element 0x{id:X}"),
    };
    format!("{name} (0x{id:X})")
}
