-- Slurm job_submit plugin for a partition `gantry slurm` schedules (docs/slurm.md, set-up):
-- install it as `job_submit.lua` beside slurm.conf with `JobSubmitPlugins=lua`, and set the
-- three values below.
--
-- * Every job submitted to the partition is held (priority 0, as `sbatch --hold`): gantry
--   releases it when the core starts it.
-- * It rings gantry's doorbell (creates DOORBELL_DIR/job.submit), so gantry polls at once
--   and releases a job that can start before Slurm's next periodic scheduling pass, instead
--   of up to a poll period later. DOORBELL_DIR is `gantry slurm --epilog-ack-dir`, seen from
--   the controller's host; nil rings nothing. A doorbell is only a hint: one that cannot be
--   written leaves the job to gantry's next periodic poll.
local GANTRY_PARTITION = "gpu"
local DOORBELL_DIR = "/var/lib/gantry/epilog-ack"
local HOLD = true

local function default_partition(part_list)
    for name, part in pairs(part_list) do
        if part.flag_default == 1 then return part.name or name end
    end
end

function slurm_job_submit(job_desc, part_list, submit_uid)
    local partition = job_desc.partition or default_partition(part_list)
    if partition == GANTRY_PARTITION then
        if HOLD then job_desc.priority = 0 end
        if DOORBELL_DIR then
            local bell = io.open(DOORBELL_DIR .. "/job.submit", "w")
            if bell then bell:close() end
        end
    end
    return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
    return slurm.SUCCESS
end
