BEGIN;

CREATE TABLE alembic_version (
    version_num VARCHAR(32) NOT NULL, 
    CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num)
);

-- Running upgrade  -> 0001

CREATE TABLE cursors (
    source VARCHAR(64) NOT NULL, 
    timestamp TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
    log_id BIGINT NOT NULL, 
    updated_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
    CONSTRAINT pk_cursors PRIMARY KEY (source)
);

CREATE TABLE files (
    id BIGSERIAL NOT NULL, 
    page_id BIGINT NOT NULL, 
    title VARCHAR(255) NOT NULL, 
    sha1 VARCHAR(40) NOT NULL, 
    uploaded_at TIMESTAMP WITHOUT TIME ZONE, 
    uploader VARCHAR(255) NOT NULL, 
    log_id BIGINT NOT NULL, 
    mime VARCHAR(100) NOT NULL, 
    size BIGINT NOT NULL, 
    width INTEGER NOT NULL, 
    height INTEGER NOT NULL, 
    state VARCHAR(20) NOT NULL, 
    reason TEXT, 
    media JSON, 
    attempts INTEGER NOT NULL, 
    claimed_by VARCHAR(64), 
    claimed_at TIMESTAMP WITHOUT TIME ZONE, 
    discovered_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
    updated_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
    CONSTRAINT pk_files PRIMARY KEY (id), 
    CONSTRAINT uq_files_page_id UNIQUE (page_id)
);

CREATE INDEX ix_files_state_id ON files (state, id);

CREATE INDEX ix_files_title ON files (title);

CREATE TABLE candidates (
    id BIGSERIAL NOT NULL, 
    file_id BIGINT NOT NULL, 
    qid VARCHAR(20) NOT NULL, 
    score FLOAT, 
    rank INTEGER, 
    linker VARCHAR(64) NOT NULL, 
    linker_version VARCHAR(200) NOT NULL, 
    labelset_hash VARCHAR(100) NOT NULL, 
    evidence JSON, 
    state VARCHAR(20) NOT NULL, 
    prominent INTEGER NOT NULL, 
    reviewer VARCHAR(255), 
    attempts INTEGER NOT NULL, 
    retry_after TIMESTAMP WITHOUT TIME ZONE, 
    claimed_by VARCHAR(64), 
    claimed_at TIMESTAMP WITHOUT TIME ZONE, 
    created_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
    updated_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
    CONSTRAINT pk_candidates PRIMARY KEY (id), 
    CONSTRAINT fk_candidates_file_id_files FOREIGN KEY(file_id) REFERENCES files (id) ON DELETE CASCADE, 
    CONSTRAINT uq_candidates_file_id_qid UNIQUE (file_id, qid)
);

CREATE INDEX ix_candidates_state_id ON candidates (state, id);

CREATE TABLE decisions (
    id BIGSERIAL NOT NULL, 
    candidate_id BIGINT NOT NULL, 
    action VARCHAR(20) NOT NULL, 
    reviewer VARCHAR(255) NOT NULL, 
    source VARCHAR(20) NOT NULL, 
    previous_state VARCHAR(20) NOT NULL, 
    decided_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
    CONSTRAINT pk_decisions PRIMARY KEY (id), 
    CONSTRAINT fk_decisions_candidate_id_candidates FOREIGN KEY(candidate_id) REFERENCES candidates (id) ON DELETE CASCADE
);

CREATE INDEX ix_decisions_candidate_id ON decisions (candidate_id);

CREATE TABLE edits (
    id BIGSERIAL NOT NULL, 
    candidate_id BIGINT NOT NULL, 
    batch_id VARCHAR(64) NOT NULL, 
    outcome VARCHAR(20) NOT NULL, 
    revid BIGINT, 
    statement_id VARCHAR(100), 
    error TEXT, 
    attempt INTEGER NOT NULL, 
    started_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
    finished_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
    CONSTRAINT pk_edits PRIMARY KEY (id), 
    CONSTRAINT fk_edits_candidate_id_candidates FOREIGN KEY(candidate_id) REFERENCES candidates (id) ON DELETE CASCADE
);

CREATE INDEX ix_edits_batch_id ON edits (batch_id);

CREATE INDEX ix_edits_candidate_id ON edits (candidate_id);

INSERT INTO alembic_version (version_num) VALUES ('0001') RETURNING alembic_version.version_num;

-- Running upgrade 0001 -> 0002

CREATE TABLE daemon_state (
    name VARCHAR(64) NOT NULL, 
    value JSON NOT NULL, 
    updated_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
    CONSTRAINT pk_daemon_state PRIMARY KEY (name)
);

CREATE INDEX ix_files_uploaded_at ON files (uploaded_at);

CREATE INDEX ix_files_updated_at ON files (updated_at);

CREATE INDEX ix_edits_finished_at ON edits (finished_at);

UPDATE alembic_version SET version_num='0002' WHERE alembic_version.version_num = '0001';

-- Running upgrade 0002 -> 0003

ALTER TABLE candidates ADD COLUMN simulated_at TIMESTAMP WITHOUT TIME ZONE;

UPDATE candidates SET state='approved', simulated_at=candidates.updated_at, claimed_by=NULL, claimed_at=NULL WHERE candidates.state = 'dry_run';

UPDATE alembic_version SET version_num='0003' WHERE alembic_version.version_num = '0002';

-- Running upgrade 0003 -> 0004

CREATE TABLE evidence_cache (
    key VARCHAR(512) NOT NULL, 
    qid VARCHAR(20), 
    expires_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
    CONSTRAINT pk_evidence_cache PRIMARY KEY (key)
);

UPDATE alembic_version SET version_num='0004' WHERE alembic_version.version_num = '0003';

-- Running upgrade 0004 -> 0005

UPDATE alembic_version SET version_num='0005' WHERE alembic_version.version_num = '0004';

-- Running upgrade 0005 -> 0006

ALTER TABLE decisions ADD COLUMN overrode VARCHAR(255);

UPDATE alembic_version SET version_num='0006' WHERE alembic_version.version_num = '0005';

-- Running upgrade 0006 -> 0007

CREATE TABLE web_sessions (
    id VARCHAR(64) NOT NULL, 
    user_name VARCHAR(255) NOT NULL, 
    user_id VARCHAR(32) NOT NULL, 
    user_groups JSON NOT NULL, 
    blocked BOOLEAN NOT NULL, 
    block_reason TEXT, 
    created_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
    expires_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
    checked_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
    CONSTRAINT pk_web_sessions PRIMARY KEY (id)
);

CREATE INDEX ix_web_sessions_expires_at ON web_sessions (expires_at);

UPDATE alembic_version SET version_num='0007' WHERE alembic_version.version_num = '0006';

-- Running upgrade 0007 -> 0008

ALTER TABLE edits ADD COLUMN rank VARCHAR(10);

UPDATE alembic_version SET version_num='0008' WHERE alembic_version.version_num = '0007';

-- Running upgrade 0008 -> 0009

ALTER TABLE web_sessions ADD COLUMN check_failed_at TIMESTAMP WITHOUT TIME ZONE;

UPDATE alembic_version SET version_num='0009' WHERE alembic_version.version_num = '0008';

-- Running upgrade 0009 -> 0010

ALTER TABLE web_sessions ADD COLUMN block_restrictions JSON;

UPDATE alembic_version SET version_num='0010' WHERE alembic_version.version_num = '0009';

-- Running upgrade 0010 -> 0011

CREATE TABLE sends (
    id BIGSERIAL NOT NULL, 
    candidate_id BIGINT NOT NULL, 
    statement_id VARCHAR(100) NOT NULL, 
    batch_id VARCHAR(64) NOT NULL, 
    worker VARCHAR(200) NOT NULL, 
    sent_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
    answered_at TIMESTAMP WITHOUT TIME ZONE, 
    settled_at TIMESTAMP WITHOUT TIME ZONE, 
    settled_as VARCHAR(20), 
    revid BIGINT, 
    CONSTRAINT pk_sends PRIMARY KEY (id), 
    CONSTRAINT fk_sends_candidate_id_candidates FOREIGN KEY(candidate_id) REFERENCES candidates (id) ON DELETE CASCADE
);

CREATE INDEX ix_sends_settled_at ON sends (settled_at);

CREATE INDEX ix_sends_candidate_id ON sends (candidate_id);

UPDATE alembic_version SET version_num='0011' WHERE alembic_version.version_num = '0010';

COMMIT;

